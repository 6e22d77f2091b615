import { expect } from "chai";
import { randomBytes } from "node:crypto";
import kafkajs from "kafkajs";
import { TestServer, newCluster, newKey, type ApiClient, type Cluster } from "../harness/server.js";
import { sharedKafka } from "../harness/kafka.js";
import { eventually } from "../harness/receiver.js";
import { openEventStore } from "../../src/store/open.js";
import { partitionForKey } from "../../src/bus/partition.js";
import { INVOCATION_PARTITIONS, INVOCATIONS_TOPIC } from "../../src/runner/invocations.js";

// Two server processes on one PostgreSQL schema and one Kafka namespace, the way a scaled-out
// deployment runs behind a load balancer (one public URL). Traffic goes to both; one is killed
// with SIGKILL mid-load and restarted; then both must tell the same story.

const collector = `export default {
  name: "Collector", version: "1.0.0",
  props: { http: "$.interface.http" },
  async run(event) { this.$emit({ pid: event.body.pid, via: event.body.via }, { summary: String(event.body.pid) }); },
};`;

const echo = `export default {
  name: "Echo", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true }, secret: { type: "string", secret: true } },
  async run(event) {
    this.http.respond({ status: 200, headers: { "content-type": "application/json" }, body: { pid: event.body.pid, secret: this.secret } });
    this.$emit({ pid: event.body.pid, via: "echo" }, { summary: String(event.body.pid) });
  },
};`;

const ticker = `export default {
  name: "Ticker", version: "1.0.0",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } },
  async run(event) { this.$emit({ tick: event.timestamp }, { summary: String(event.timestamp) }); },
};`;

const many = `export default {
  name: "Many", version: "1.0.0",
  props: { http: "$.interface.http" },
  async run(event) { for (let i = 0; i < event.count; i++) this.$emit({ n: event.n, i }, { summary: event.n + "." + i }); },
};`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every page of a listing, oldest first for resources (the API's order). */
async function allPages(client: ApiClient, path: string): Promise<unknown[]> {
  const pages: unknown[] = [];
  let after = "";
  for (let i = 0; i < 100; i++) {
    const r = await client.get(`${path}${path.includes("?") ? "&" : "?"}limit=100${after}`);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    pages.push(r.body);
    if (r.body.data.length === 0) return pages;
    after = `&after=${r.body.page_info.end_cursor}`;
  }
  throw new Error(`${path}: too many pages`);
}

/** Which node (by Kafka client id) owns each invocation partition right now, once the group is stable with `members` members. */
async function runnerAssignment(cluster: Cluster, members: number): Promise<Map<number, string>> {
  const { brokers } = await sharedKafka();
  const admin = new kafkajs.Kafka({ clientId: "multinode-test", brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const group = `${cluster.busNamespace}.headwater.runners`;
    const topic = `${cluster.busNamespace}.${INVOCATIONS_TOPIC}`;
    return await eventually(
      async () => {
        const [description] = (await admin.describeGroups([group])).groups;
        if (!description || description.state !== "Stable" || description.members.length !== members) return undefined;
        const owners = new Map<number, string>();
        for (const member of description.members) {
          const decoded = kafkajs.AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
          for (const partition of decoded?.assignment[topic] ?? []) owners.set(partition, member.clientId);
        }
        return owners.size === INVOCATION_PARTITIONS ? owners : undefined;
      },
      60_000,
      `a stable runner group of ${members}`,
    );
  } finally {
    await admin.disconnect();
  }
}

const endpointPath = (source: { configured_props: { http: { endpoint_url: string } } }) =>
  new URL(source.configured_props.http.endpoint_url).pathname;

describe("scale: two nodes on one PostgreSQL log and Kafka, one killed mid-load", function () {
  this.timeout(300_000);
  const cluster = newCluster();
  const key = newKey();
  const env = {
    // Both nodes behind one public address, so endpoint URLs (and listings) agree.
    HEADWATER_PUBLIC_URL: "http://headwater.test",
    HEADWATER_SECRET_KEY: randomBytes(32).toString("hex"),
    HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1",
  };
  const nodes = [
    new TestServer({ mode: "scaled", cluster, bootstrapKey: key, env }),
    new TestServer({ mode: "scaled", cluster, bootstrapKey: key, env }),
  ] as const;
  const clientId = (node: TestServer) => `headwater-${node.nodeId}`;

  after(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  });

  it("starts both nodes at once on an empty store: one bootstrap, one registry", async () => {
    await Promise.all(nodes.map((n) => n.start(90_000)));
    for (const node of nodes) expect((await node.client().get("/v1/users/me")).status).to.equal(200);
    const store = await openEventStore(cluster.eventStore);
    try {
      const all = await store.readAll();
      const users = all.filter((e) => e.type === "UserCreated");
      expect(users, "exactly one operator account").to.have.length(1);
      const registry = all.filter((e) => e.type === "ComponentSaved" && (e.data as { ownerId: string }).ownerId === "registry");
      const keys = registry.map((e) => (e.data as { key: string }).key);
      expect(keys.length, "each registry component published once").to.equal(new Set(keys).size).and.be.greaterThan(0);
      for (const k of keys) {
        const [a, b] = await Promise.all(nodes.map((n) => n.client().get(`/v1/components/registry/${k}`)));
        expect(a.status).to.equal(200);
        expect(b.body).to.deep.equal(a.body);
      }
    } finally {
      await store.close();
    }
  });

  it("takes traffic on both nodes, survives a SIGKILL of one, and both nodes agree afterwards", async () => {
    const [a, b] = nodes;
    const clients = () => nodes.map((n) => n.client());

    // Sources deployed on both nodes; the saved collector is reused by deploys under load.
    const saved = (await a.client().post("/v1/components", { component_code: collector })).body.data;
    const collectors: any[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await nodes[i % 2].client().post("/v1/sources", { component_id: saved.id, name: `collector ${i}` });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      collectors.push(r.body.data);
    }
    const echoes: any[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await nodes[i % 2].client().post("/v1/sources", {
        component_code: echo,
        name: `echo ${i}`,
        configured_props: { secret: `s3cret-${i}` },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      echoes.push(r.body.data);
    }
    for (const node of nodes) {
      for (const s of [...collectors, ...echoes])
        await eventually(
          async () => ((await node.client().get(`/v1/sources/${s.id}`)).status === 200 ? true : undefined),
          10_000,
          `${s.id} on ${node.nodeId}`,
        );
    }

    // Runs are spread by partition ownership: find who runs what.
    const owners = await runnerAssignment(cluster, 2);
    const ownerOf = (sourceId: string) => owners.get(partitionForKey(sourceId, INVOCATION_PARTITIONS))!;
    expect(new Set(owners.values()).size, "both nodes own invocation partitions").to.equal(2);

    // A custom response whose run happens on the other node still answers, with the secret opened there.
    for (const [i, s] of echoes.entries()) {
      const other = nodes.find((n) => clientId(n) !== ownerOf(s.id))!;
      const r = await fetch(`${other.url}${endpointPath(s)}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pid: `warm-${i}` }),
      });
      expect(r.status).to.equal(200);
      expect(await r.json()).to.deep.equal({ pid: `warm-${i}`, secret: `s3cret-${i}` });
    }

    const tickerSource = (
      await a.client().post("/v1/sources", { component_code: ticker, name: "ticker", configured_props: { timer: { intervalSeconds: 1 } } })
    ).body.data;
    // The victim owns the ticker's partition: its timer runs must move to the survivor.
    const victim = nodes.find((n) => clientId(n) === ownerOf(tickerSource.id))!;
    const survivor = victim === a ? b : a;

    // Acknowledged work, by unique payload id.
    const expected = new Map<string, Set<string>>(); // source id -> pids
    const ack = (sourceId: string, pid: string) => {
      const set = expected.get(sourceId) ?? new Set<string>();
      set.add(pid);
      expected.set(sourceId, set);
    };
    const attempts = new Map<string, number>();
    const deployed: string[] = [];
    const failures: string[] = [];
    let down = false;
    let stop = false;
    /** When the victim was killed (until then, every request was sent before it). */
    let killedAt = Number.POSITIVE_INFINITY;
    let seq = 0;
    let echoAnswers = 0;
    const liveNodes = () => (down ? [survivor] : [...nodes]);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
    // Each source keeps its newest 100 events: stay under that so every acknowledged event can be checked.
    const roomy = (sources: any[]) => sources.filter((s) => (attempts.get(s.id) ?? 0) < 90);

    const worker = async (w: number) => {
      while (!stop) {
        const node = pick(liveNodes());
        const pid = `p${w}-${seq++}`;
        const kind = seq % 10 === 0 ? "deploy" : pick(["http", "http", "api", "echo"] as const);
        const pool = roomy(kind === "echo" ? echoes : collectors);
        if (kind !== "deploy" && pool.length === 0) {
          await sleep(50);
          continue;
        }
        const source = pick(pool);
        try {
          if (kind === "deploy") {
            const r = await node.client().post("/v1/sources", { component_id: saved.id, name: `load ${pid}` });
            if (r.status === 200) deployed.push(r.body.data.id);
            else failures.push(`deploy ${r.status}`);
          } else if (kind === "http") {
            attempts.set(source.id, (attempts.get(source.id) ?? 0) + 1);
            const r = await fetch(`${node.url}${endpointPath(source)}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ pid, via: "http" }),
            });
            if (r.status === 200) ack(source.id, pid);
            else failures.push(`http ${r.status}`);
          } else if (kind === "api") {
            attempts.set(source.id, (attempts.get(source.id) ?? 0) + 1);
            const r = await node.client().post(`/v1/sources/${source.id}/run`, { event: { body: { pid, via: "api" } } });
            if (r.status === 200 && r.body.data.ok) ack(source.id, pid);
            else failures.push(`api ${r.status} ${JSON.stringify(r.body)}`);
          } else {
            attempts.set(source.id, (attempts.get(source.id) ?? 0) + 1);
            const sentAt = Date.now();
            const r = await fetch(`${node.url}${endpointPath(source)}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ pid }),
            });
            if (r.status === 200) {
              const answer = (await r.json()) as { pid: string; secret: string };
              if (answer.pid !== pid || answer.secret !== `s3cret-${echoes.indexOf(source)}`)
                failures.push(`echo answered ${JSON.stringify(answer)} to ${pid}`);
              echoAnswers++;
              ack(source.id, pid);
            } else {
              // A request the victim ran and recorded just before it was killed cannot be answered
              // by anyone: the survivor finds its run recorded and answers 503, "send it again"
              // (README, "Custom responses"). Any other refusal fails the test below.
              const text = await r.text();
              const lost = r.status === 503 && sentAt < killedAt && text.includes("its response was lost");
              failures.push(`echo ${lost ? "answer lost by the kill" : "refused"}: ${r.status} ${text.slice(0, 300)}`);
            }
          }
        } catch (error) {
          // A request cut by the kill is not acknowledged (fetch fails with a TypeError); anything else fails the test below.
          const where = error instanceof TypeError && node === victim ? "on victim" : "unexpectedly";
          failures.push(`${kind} ${where}: ${(error as Error).message}`);
        }
      }
    };
    const workers = Array.from({ length: 6 }, (_, w) => worker(w));

    await sleep(4000);
    // A burst just before the kill leaves the victim in the middle of a backlog of runs, some recorded
    // but not yet committed on the bus: those are redelivered to the survivor and must not count twice.
    await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        const source = collectors[i % collectors.length];
        const pid = `burst-${i}`;
        attempts.set(source.id, (attempts.get(source.id) ?? 0) + 1);
        const r = await fetch(`${survivor.url}${endpointPath(source)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ pid, via: "burst" }),
        });
        if (r.status === 200) ack(source.id, pid);
        else failures.push(`burst ${r.status}`);
      }),
    );
    await sleep(100);
    const ackedBeforeKill = [...expected.values()].reduce((n, s) => n + s.size, 0);
    killedAt = Date.now();
    await victim.kill();
    down = true;
    // Longer than the Kafka session timeout (10 s): the victim's partitions move to the survivor under load.
    await sleep(14_000);
    await victim.start(120_000);
    const restartedAt = Date.now();
    down = false;
    await sleep(4000);
    stop = true;
    await Promise.all(workers);
    const ackedTotal = [...expected.values()].reduce((n, s) => n + s.size, 0);
    expect(ackedBeforeKill, "traffic before the kill").to.be.greaterThan(20);
    expect(ackedTotal - ackedBeforeKill, "traffic after the kill").to.be.greaterThan(20);
    expect(echoAnswers).to.be.greaterThan(5);
    const unexpected = failures.filter((f) => !/ on victim: |^echo answer lost by the kill: /.test(f));
    console.log(
      `      ${ackedTotal} acknowledged (${ackedBeforeKill} before the kill), ${echoAnswers} custom responses, ${deployed.length} deploys, ${failures.length - unexpected.length} requests cut by the kill`,
    );
    expect(unexpected, "only requests to the killed node may fail").to.deep.equal([]);

    // Stop the timer, then read what it did.
    const paused = await survivor.client().put(`/v1/sources/${tickerSource.id}`, { active: false });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
    const pausedAt = Date.now();

    // Every acknowledged event is on both nodes exactly once.
    for (const client of clients()) {
      for (const [sourceId, pids] of expected) {
        await eventually(
          async () => {
            const data = (await client.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event`)).body.data as {
              event: { pid: string };
            }[];
            const seen = data.map((e) => e.event.pid);
            const missing = [...pids].filter((p) => !seen.includes(p));
            if (missing.length > 0) return undefined;
            expect(seen.length, `${sourceId}: no event twice`).to.equal(new Set(seen).size);
            return true;
          },
          60_000,
          `every acknowledged event of ${sourceId} on ${client.baseUrl}`,
        );
      }
      const names = (await allPages(client, "/v1/users/me/sources")).flatMap((p: any) => p.data.map((s: { id: string }) => s.id));
      for (const id of deployed)
        expect(
          names.filter((n: string) => n === id),
          `deployed ${id} listed once`,
        ).to.have.length(1);
    }

    // Timer ticks: one per second, none lost and none doubled across the kill.
    const ticks = (
      await eventually(
        async () => {
          const data = (await survivor.client().get(`/v1/sources/${tickerSource.id}/event_summaries?limit=100&expand=event`)).body.data as {
            event: { tick: number };
          }[];
          const newest = data[0]?.event.tick ?? 0;
          return newest * 1000 >= pausedAt - 3000 ? data : undefined;
        },
        30_000,
        "ticks up to the pause",
      )
    )
      .map((e) => e.event.tick)
      .sort((x, y) => x - y);
    console.log(
      `      ${ticks.length} timer ticks from ${ticks[0]} to ${ticks[ticks.length - 1]}; kill at ${Math.floor(killedAt / 1000)}, restart at ${Math.floor(restartedAt / 1000)}`,
    );
    expect(ticks.length, "no tick twice").to.equal(new Set(ticks).size);
    const gaps = ticks
      .slice(1)
      .map((t, i) => t - ticks[i])
      .filter((d) => d !== 1);
    expect(gaps, `ticks one second apart: ${ticks.join(",")}`).to.deep.equal([]);
    expect(ticks[0] * 1000, "ticking before the kill").to.be.lessThan(killedAt);
    expect(ticks[ticks.length - 1] * 1000, "ticking after the restart").to.be.greaterThan(restartedAt);

    // Retention on both projector nodes: a source past its kept window, written through both.
    const bulky = (await a.client().post("/v1/sources", { component_code: many, name: "bulky" })).body.data;
    for (let n = 0; n < 16; n++) {
      const r = await nodes[n % 2].client().post(`/v1/sources/${bulky.id}/run`, { event: { n, count: 10 } });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    }
    const store = await openEventStore(cluster.eventStore);
    try {
      await eventually(
        async () => {
          const kept = (await store.readStream(`emitter-${bulky.id}`)).filter((e) => e.type === "EventEmitted");
          return kept.length === 100 ? true : undefined;
        },
        20_000,
        "the log truncated to the kept window",
      );
    } finally {
      await store.close();
    }

    // Both nodes give the same listings.
    const snapshot = async (client: ApiClient) => {
      const sources = await allPages(client, "/v1/users/me/sources");
      const ids = sources.flatMap((p: any) => p.data.map((s: { id: string }) => s.id));
      const events: Record<string, unknown> = {};
      for (const id of ids) events[id] = (await client.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`)).body;
      return { sources, events, me: (await client.get("/v1/users/me")).body };
    };
    const [first, second] = await eventually(
      async () => {
        const pair = await Promise.all(clients().map(snapshot));
        return JSON.stringify(pair[0]) === JSON.stringify(pair[1]) ? pair : undefined;
      },
      30_000,
      "identical listings on both nodes",
    ).catch(async () => Promise.all(clients().map(snapshot)));
    expect(second).to.deep.equal(first);
  });
});
