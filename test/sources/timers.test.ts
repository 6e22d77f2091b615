import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { EMIT_TIMER_EVENT, deploy, eventually, events, me, sleep, type EventSummary } from "./sourcesSupport.js";

// The timer interface over real HTTP against the real server process: the event run() receives,
// interval and cron (UTC) schedules, pause and delete, the minimum interval, and a restart's one
// catch-up fire. Intervals are 1-3 s, so nothing waits for minutes.

const timestamps = (list: EventSummary[]) => list.map((e) => e.event.timestamp as number);
const diffs = (values: number[]) => values.slice(1).map((v, i) => v - values[i]);

describe("timers (real server)", function () {
  this.timeout(60_000);
  // The server's local zone is not UTC, so a cron evaluated in local time would fire at other hours.
  const server = new TestServer({ env: { HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1", TZ: "Asia/Kolkata" } });
  const strict = new TestServer({ env: { HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "30" } });
  let admin: ApiClient;
  // Deployed up front so their waits overlap; each test below checks its own.
  let interval: any;
  let cron: any;
  let everyInterval: any;
  let cronSchedule: any;
  let restartInterval: any;
  let restartCron: any;

  before(async () => {
    await Promise.all([server.start(), strict.start()]);
    admin = server.client();
    const utcHour = new Date().getUTCHours();
    [interval, cron, everyInterval, cronSchedule, restartInterval, restartCron] = await Promise.all([
      deploy(admin, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 1 } }, "every second"),
      // Every 2 s, only during this UTC hour and the next one.
      deploy(admin, EMIT_TIMER_EVENT, { timer: { cron: `*/2 * ${utcHour},${(utcHour + 1) % 24} * * *` } }, "cron utc"),
      admin
        .post("/v1/sources", { key: "schedule-every-interval", configured_props: { timer: { intervalSeconds: 1 } } })
        .then((r) => r.body.data),
      admin.post("/v1/sources", { key: "schedule-cron", configured_props: { timer: { cron: "* * * * * *" } } }).then((r) => r.body.data),
      deploy(admin, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 2 } }, "restart interval"),
      deploy(admin, EMIT_TIMER_EVENT, { timer: { cron: "*/3 * * * * *" } }, "restart cron"),
    ]);
    for (const s of [everyInterval, cronSchedule]) expect(s, "registry timer source deployed").to.have.property("id");
  });
  after(() => Promise.all([server.stop(), strict.stop()]));

  it("a timer the component fixes with static (hidden, as published instant sources keep theirs) needs no configuration and fires", async () => {
    const fixed = await deploy(
      admin,
      `export default {
        name: "Static timer",
        version: "0.0.1",
        props: { db: "$.service.db", timer: { type: "$.interface.timer", static: { intervalSeconds: 1 }, hidden: true } },
        async run(event) { this.$emit(event); },
      };`,
      {},
      "static timer",
    );
    expect(fixed.configured_props.timer).to.deep.equal({ cron: null, interval_seconds: 1, timezone: null });
    const fired = await eventually("2 timer events", async () => {
      const got = await events(admin, fixed.id);
      return got.length >= 2 ? got : undefined;
    });
    expect(fired[0].event.interval_seconds).to.equal(1);
  });

  it("an interval timer's event {timestamp, interval_seconds} reaches run, once per interval", async () => {
    expect(interval.configured_props.timer).to.deep.equal({ cron: null, interval_seconds: 1, timezone: null });
    const list = await eventually("4 timer events", async () => {
      const got = await events(admin, interval.id);
      return got.length >= 4 ? got : undefined;
    });
    for (const e of list) {
      expect(Object.keys(e.event).sort()).to.deep.equal(["interval_seconds", "timestamp"]);
      expect(e.event.interval_seconds).to.equal(1);
      expect(Number.isInteger(e.event.timestamp)).to.equal(true);
      // Fired on time: indexed within the second its timestamp names.
      expect(e.indexed_at_ms - e.event.timestamp * 1000).to.be.within(0, 999);
    }
    expect(diffs(timestamps(list))).to.deep.equal(list.slice(1).map(() => 1));
    // The first tick comes one interval after the deploy.
    expect(list[0].event.timestamp).to.be.within(interval.created_at + 1, interval.created_at + 2);
  });

  it("a cron timer fires on its schedule, evaluated in UTC (6-field seconds cron)", async () => {
    expect(cron.configured_props.timer.interval_seconds).to.equal(2);
    const list = await eventually("3 cron events", async () => {
      const got = await events(admin, cron.id);
      return got.length >= 3 ? got : undefined;
    });
    for (const e of list) {
      expect(e.event.interval_seconds).to.equal(2);
      expect(e.event.timestamp % 2, "on even seconds").to.equal(0);
      expect(e.indexed_at_ms - e.event.timestamp * 1000).to.be.within(0, 999);
    }
    expect(diffs(timestamps(list))).to.deep.equal(list.slice(1).map(() => 2));
  });

  it("timer-only registry components (no run) emit their timer event", async () => {
    for (const source of [everyInterval, cronSchedule]) {
      const list = await eventually(`3 events of ${source.name}`, async () => {
        const got = await events(admin, source.id);
        return got.length >= 3 ? got : undefined;
      });
      for (const e of list) {
        expect(e.event).to.have.keys(["timestamp", "interval_seconds"]);
        expect(e.event.interval_seconds).to.equal(1);
      }
      expect(diffs(timestamps(list))).to.deep.equal(list.slice(1).map(() => 1));
    }
  });

  it("paused and deleted sources never fire; a resumed one does not catch up on its pause", async () => {
    const created = server.cli("admin", "user", "create", "--username", "timer-deleter", "--email", "deleter@example.com");
    expect(created.status, created.stderr).to.equal(0);
    const owner = server.client(created.json.api_key);
    const [paused, deleted] = await Promise.all([
      deploy(admin, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 1 } }, "to pause"),
      deploy(owner, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 1 } }, "to delete"),
    ]);
    await eventually("both fire", async () =>
      (await events(admin, paused.id)).length >= 2 && (await me(owner)).daily_invocations_used >= 2 ? true : undefined,
    );

    const pause = await admin.put(`/v1/sources/${paused.id}`, { active: false });
    expect(pause.status).to.equal(200);
    expect(pause.body.data.active).to.equal(false);
    expect((await owner.delete(`/v1/sources/${deleted.id}`)).status).to.equal(204);
    await sleep(300); // a run already in the sandbox when the answer came may still land
    const pausedCount = (await events(admin, paused.id)).length;
    const usedAfterDelete = (await me(owner)).daily_invocations_used;

    await sleep(3500);
    expect((await events(admin, paused.id)).length, "a paused source fired").to.equal(pausedCount);
    expect((await me(owner)).daily_invocations_used, "a deleted source ran").to.equal(usedAfterDelete);
    expect((await owner.get(`/v1/sources/${deleted.id}`)).status).to.equal(404);

    const resume = await admin.put(`/v1/sources/${paused.id}`, { active: true });
    expect(resume.status).to.equal(200);
    const after = await eventually("the resumed source fires", async () => {
      const got = (await events(admin, paused.id)).slice(pausedCount);
      return got.length >= 2 ? got : undefined;
    });
    // The first tick after resuming comes an interval after it, not a tick missed while paused.
    expect(after[0].event.timestamp).to.be.greaterThan(resume.body.data.updated_at);
    expect(diffs(timestamps(after))).to.deep.equal(after.slice(1).map(() => 1));
  });

  it("a timer below HEADWATER_TIMER_MIN_INTERVAL_SECONDS is a 400 on create and on update", async () => {
    const client = strict.client();
    const tooOften = [{ intervalSeconds: 29 }, { intervalSeconds: 1 }, { cron: "*/10 * * * * *" }, { cron: "* * * * * *" }];
    for (const timer of tooOften) {
      const r = await client.post("/v1/sources", { component_code: EMIT_TIMER_EVENT, configured_props: { timer } });
      expect(r.status, JSON.stringify(timer)).to.equal(400);
      expect(r.body.code).to.equal("invalid_request");
      expect(r.body.details.map((d: { path: string }) => d.path).join(" ")).to.match(/configured_props\.timer/);
    }
    expect(
      (await client.post("/v1/sources", { key: "schedule-every-interval", configured_props: { timer: { intervalSeconds: 5 } } })).status,
    ).to.equal(400);
    // Ticks 20 s apart, then 40 s: sent during second s, the next two ticks are the 40 s gap, the 20 s one comes after.
    if (Date.now() % 1000 > 700) await sleep(1000 - (Date.now() % 1000) + 50);
    const second = new Date().getUTCSeconds();
    const uneven = await client.post("/v1/sources", {
      component_code: EMIT_TIMER_EVENT,
      configured_props: { timer: { cron: `${second},${(second + 20) % 60} * * * * *` } },
    });
    expect(uneven.status, "a cron whose shortest gap is below the minimum").to.equal(400);
    const ok = await client.post("/v1/sources", { component_code: EMIT_TIMER_EVENT, configured_props: { timer: { intervalSeconds: 30 } } });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    const cronOk = await client.post("/v1/sources", {
      component_code: EMIT_TIMER_EVENT,
      configured_props: { timer: { cron: "*/5 * * * *" } },
    });
    expect(cronOk.status, JSON.stringify(cronOk.body)).to.equal(200);
    const update = await client.put(`/v1/sources/${ok.body.data.id}`, { configured_props: { timer: { intervalSeconds: 10 } } });
    expect(update.status).to.equal(400);
    expect((await client.get(`/v1/sources/${ok.body.data.id}`)).body.data.configured_props.timer.interval_seconds).to.equal(30);
  });

  // Last: it restarts the shared server.
  it("a restart neither double-fires nor silently skips: one catch-up fire, then the regular cadence", async () => {
    const sources = [
      { source: restartInterval, step: 2 },
      { source: restartCron, step: 3 },
    ];
    await eventually("2 events each before the stop", async () => {
      for (const { source } of sources) if ((await events(admin, source.id)).length < 2) return undefined;
      return true;
    });
    const stoppedAt = Date.now();
    await server.stop();
    // Down for more than two steps of the slower source (3 s): at least two of its ticks are missed, so
    // the catch-up (the newest missed one only) leaves a visible gap. With one missed tick there is none.
    await sleep(7000);
    await server.start();
    const restartedAt = Date.now();
    admin = server.client();

    for (const { source, step } of sources) {
      const list = await eventually(`catch-up and 2 regular ticks of ${source.name}`, async () => {
        const got = await events(admin, source.id);
        return got.filter((e) => e.event.timestamp * 1000 > restartedAt).length >= 2 ? got : undefined;
      });
      const ts = timestamps(list);
      const gaps = diffs(ts);
      const downtime = gaps.findIndex((g) => g !== step);
      expect(downtime, `one gap in ${JSON.stringify(ts)}`).to.be.greaterThan(-1);
      // Every other gap is exactly one step: no tick twice, none skipped while up.
      expect(
        gaps.filter((g, i) => i !== downtime && g !== step),
        `cadence of ${JSON.stringify(ts)}`,
      ).to.deep.equal([]);
      expect(gaps[downtime], "the downtime spans several ticks").to.be.greaterThan(step);
      const before = ts[downtime];
      const catchUp = ts[downtime + 1];
      expect(before * 1000, "last tick before the stop").to.be.at.most(stoppedAt);
      // The catch-up is a tick missed during the downtime, fired at start (not the first tick after it).
      expect(catchUp * 1000).to.be.greaterThan(stoppedAt);
      expect(catchUp * 1000, `catch-up tick ${catchUp} fired at start (${restartedAt})`).to.be.at.most(restartedAt + 100);
      expect(list[downtime + 1].indexed_at_ms).to.be.at.least(restartedAt - 1000);
    }
  });
});
