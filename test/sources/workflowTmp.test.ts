import { expect } from "chai";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer, type ApiClient } from "../harness/server.js";
import { deploy, eventually } from "./sourcesSupport.js";

// A workflow run's steps share /tmp, as on Pipedream: one step leaves files there, the next reads
// them (our own fixtures in test/fixtures/actions/tmpfiles/), though each step is its own
// invocation. A run starts with /tmp empty, and so does an action or a source run on its own.

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "test", "fixtures", "actions", "tmpfiles");
const fixture = (name: string) => fs.readFileSync(path.join(fixtures, "actions", name, `${name}.mjs`), "utf8");

const EVERY_BYTE = Array.from({ length: 256 }, (_, i) => i);

/** A source that emits what its run finds in /tmp. */
const LIST_TMP_SOURCE = `import fs from "fs";
export default {
  name: "Tmp lister", version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run() { this.$emit({ found: fs.readdirSync("/tmp") }, { summary: "listed" }); },
};`;

describe("workflows: steps share /tmp (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  let admin: ApiClient;
  let saveId: string;
  let readId: string;

  const save = async (code: string) => {
    const r = await admin.post("/v1/components", { component_code: code });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data.id as string;
  };
  const deployWorkflow = async (definition: unknown) => {
    const r = await admin.post("/v1/workflows", { definition });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data as { id: string };
  };
  const run = async (id: string, event: unknown) => {
    const r = await admin.post(`/v1/workflows/${id}/run`, { event });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data;
  };

  before(async () => {
    await server.start();
    admin = server.client();
    saveId = await save(fixture("save-note"));
    readId = await save(fixture("read-note"));
  });
  after(() => server.stop());

  it("a step reads the text and binary files an earlier step left in /tmp (subdirectory, mtime kept); the next run starts empty", async () => {
    const workflow = await deployWorkflow({
      name: "Download then read",
      trigger: "none",
      steps: [
        { name: "download", component_id: saveId, props: { text: "{{steps.trigger.event.text}}" } },
        { name: "read", component_id: readId },
        {
          name: "list",
          code: `async (steps, $) => {
            const fs = await import("fs");
            return { notes: fs.readdirSync("/tmp/notes").sort(), top: fs.readdirSync("/tmp").sort() };
          }`,
        },
      ],
    });

    const first = await run(workflow.id, { text: "héllo, wörld ✓" });
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    const [download, read, list] = first.steps as { return_value: any }[];
    expect(download.return_value.found).to.deep.equal([]);
    expect(read.return_value).to.deep.include({
      text: "héllo, wörld ✓",
      bytes: EVERY_BYTE,
      listing: ["note.txt", "raw"],
      rawIsDirectory: true,
      padding: null,
      added: "none",
    });
    expect(read.return_value.noteMtimeMs).to.equal(download.return_value.noteMtimeMs);
    // What step 2 added and what it carried both reach step 3.
    expect(list.return_value).to.deep.equal({ notes: ["note.txt", "raw", "read.txt"], top: ["notes"] });

    const second = await run(workflow.id, { text: "second run" });
    expect(second.ok, JSON.stringify(second.error)).to.equal(true);
    expect(second.steps[0].return_value.found).to.deep.equal([]);
    expect(second.steps[1].return_value.text).to.equal("second run");
  });

  it("the 64 MB bound is the whole run's: a later step gets ENOSPC for what does not fit beside the earlier steps' files", async () => {
    // 63.5 MB would fit in an empty /tmp; beside the 1 MB the first step left, it does not.
    const workflow = await deployWorkflow({
      name: "Fill tmp",
      trigger: "none",
      steps: [
        { name: "download", component_id: saveId, props: { text: "big", padKilobytes: 1024 } },
        { name: "read", component_id: readId, props: { addKilobytes: 64 * 1024 - 512 } },
      ],
    });
    const result = await run(workflow.id, {});
    expect(result.ok, JSON.stringify(result.error)).to.equal(true);
    expect(result.steps[1].return_value).to.include({ text: "big", padding: 1024 * 1024, added: "ENOSPC" });
    const byHand = await admin.post(`/v1/components/${saveId}/run`, { props: { text: "alone", padKilobytes: 64 * 1024 - 512 } });
    expect(byHand.body.data.ok, JSON.stringify(byHand.body.data.error)).to.equal(true);
  });

  it("an action run by hand and a source's run start with an empty /tmp", async () => {
    // A workflow that leaves files behind ran first (above and here).
    const workflow = await deployWorkflow({
      name: "Leave files",
      trigger: "none",
      steps: [
        { name: "download", component_id: saveId, props: { text: "left behind" } },
        { name: "read", component_id: readId },
      ],
    });
    expect((await run(workflow.id, {})).ok).to.equal(true);

    const byHand = await admin.post(`/v1/components/${readId}/run`, { props: {} });
    expect(byHand.status, JSON.stringify(byHand.body)).to.equal(200);
    expect(byHand.body.data.ok).to.equal(false);
    expect(byHand.body.data.error.message).to.match(/ENOENT/);
    const saved = await admin.post(`/v1/components/${saveId}/run`, { props: { text: "by hand" } });
    expect(saved.body.data.ok, JSON.stringify(saved.body.data.error)).to.equal(true);
    expect(saved.body.data.return_value.found).to.deep.equal([]);

    const source = await deploy(admin, LIST_TMP_SOURCE);
    const answer = await fetch(source.configured_props.http.endpoint_url, { method: "POST", body: "{}" });
    expect(answer.status).to.equal(200);
    const events = await eventually("the source's event", async () => {
      const r = await admin.get(`/v1/sources/${source.id}/event_summaries?expand=event`);
      return r.body.data.length > 0 ? r.body.data : undefined;
    });
    expect(events[0].event).to.deep.equal({ found: [] });
  });
});
