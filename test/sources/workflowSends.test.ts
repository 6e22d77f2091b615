// Workflow steps are action runs (runAction): their $.send.* reach the real destinations once the
// step succeeded, and a send that fails fails the step with SEND_FAILED on $errors.
import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";
import { startSmtp, type SmtpTestServer } from "../harness/smtp.js";
import { startS3, type S3TestServer } from "../harness/s3.js";

describe("workflow steps send through the destinations (real server, SMTP, S3, HTTP)", function () {
  this.timeout(90_000);
  let smtp: SmtpTestServer;
  let s3: S3TestServer;
  const receiver = new Receiver();
  let server: TestServer;
  let admin: ApiClient;

  before(async () => {
    [smtp, s3] = await Promise.all([startSmtp(), startS3(["steps"]), receiver.start()]);
    server = new TestServer({
      env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1", HEADWATER_BOOTSTRAP_EMAIL: "lead@example.com", ...smtp.env(), ...s3.env() },
    });
    await server.start();
    admin = server.client();
  });
  after(async () => {
    await server?.stop();
    await Promise.all([smtp?.stop(), s3?.stop(), receiver.stop()]);
  });

  const deploy = async (definition: unknown) => {
    const r = await admin.post("/v1/workflows", { definition });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data as { id: string; steps: { name: string; cell_id: string }[] };
  };

  it("email, S3 object, HTTP POST and an SSE channel emit from one run", async () => {
    const workflow = await deploy({
      name: "Sender",
      steps: [
        { name: "count", code: "async (steps, $) => steps.trigger.event.items.length" },
        {
          name: "send",
          code: `async (steps, $) => {
            $.send.email({ subject: "Items: " + steps.count.$return_value, text: "see the archive" });
            $.send.s3({ bucket: "steps", prefix: "runs/", payload: steps.trigger.event });
            $.send.http({ url: "${receiver.url}/notify", data: { count: steps.count.$return_value } });
            $.send.sse({ channel: "live", payload: { count: steps.count.$return_value } });
          }`,
        },
      ],
    });
    const r = await admin.post(`/v1/workflows/${workflow.id}/run`, { event: { items: [1, 2, 3] } });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data.ok, JSON.stringify(r.body.data)).to.equal(true);
    const [mail] = await smtp.waitFor((m) => m.subject === "Items: 3");
    expect(mail.to).to.equal("lead@example.com");
    const [post] = await receiver.waitFor((p) => p.path === "/notify");
    expect(JSON.parse(post.body)).to.deep.equal({ count: 3 });
    expect(post.headers["x-headwater-emitter-id"]).to.equal(workflow.id);
    const objects = await s3.objects("steps", "runs/");
    expect(objects).to.have.length(1);
    expect(JSON.parse(objects[0].body)).to.deep.equal({ items: [1, 2, 3] });
    expect(objects[0].key).to.match(new RegExp(`-${workflow.steps[1].cell_id}-0\\.json$`));
    const listed = await admin.get(`/v1/workflows/${workflow.id}/event_summaries?expand=event`);
    expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
    expect(listed.body.data.map((e: any) => [e.metadata.name, e.event])).to.deep.equal([["live", { raw_event: { count: 3 } }]]);
  });

  it("a send that fails fails its step: SEND_FAILED on $errors, later steps do not run", async () => {
    receiver.status = 500;
    try {
      const workflow = await deploy({
        name: "Failing sender",
        steps: [
          { name: "send", code: `async (steps, $) => { $.send.http({ url: "${receiver.url}/broken" }); return "queued"; }` },
          { name: "never", code: 'async (steps, $) => { $.send.emit({ raw_event: "never" }); }' },
        ],
      });
      const r = await admin.post(`/v1/workflows/${workflow.id}/run`, { event: {} });
      expect(r.body.data.ok).to.equal(false);
      const errors = await admin.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`);
      expect(errors.body.data).to.have.length(1);
      const error = errors.body.data[0].event.error;
      expect(error.code).to.equal("SEND_FAILED");
      expect(error.cellId).to.equal(workflow.steps[0].cell_id);
      expect(error.stack).to.match(/\$\.send\.http POST .*\/broken failed: .*answered HTTP 500/);
      const emitted = await admin.get(`/v1/workflows/${workflow.id}/event_summaries`);
      expect(
        emitted.body.data.filter((e: any) => e.metadata.name !== "$errors"),
        "the later step did not run",
      ).to.deep.equal([]);
    } finally {
      receiver.status = 200;
    }
  });
});
