import { expect } from "chai";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { TestServer } from "../harness/server.js";

// The OpenAPI document as a client author uses it: valid (Redocly's recommended rules), complete
// (every route, source endpoints, SSE, errors per route, named schemas), and good enough to
// generate a typed client (openapi-typescript) that compiles (tsc, strict) and works against the
// live server through openapi-fetch: create a source, send it a request, list its events.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

const CLIENT = `import createClient from "openapi-fetch";
import type { paths, components } from "./schema.js";

type Source = components["schemas"]["Source"];

const client = createClient<paths>({
  baseUrl: process.env.HEADWATER_URL!,
  headers: { Authorization: \`Bearer \${process.env.HEADWATER_KEY}\` },
});

const created = await client.POST("/v1/sources", { body: { key: "http-new-requests", name: "typed-client" } });
if (created.error) throw new Error(created.error.error + " " + created.error.code);
const source: Source = created.data.data;
// @ts-expect-error: the generated types know a source has no such field
void created.data.data.no_such_field;

const endpoint = (source.configured_props as { http: { endpoint_url: string } }).http.endpoint_url;
const sent = await fetch(endpoint + "/typed", { method: "POST", headers: { "content-type": "application/json" }, body: '{"typed":true}' });
if (sent.status !== 200) throw new Error("endpoint answered " + sent.status);

let count = 0;
for (let i = 0; i < 100 && count === 0; i++) {
  const listed = await client.GET("/v1/sources/{id}/event_summaries", { params: { path: { id: source.id }, query: { expand: "event", limit: 10 } } });
  if (listed.error) throw new Error(listed.error.error);
  count = listed.data.page_info.total_count;
  if (count === 0) await new Promise((r) => setTimeout(r, 100));
  else console.log(JSON.stringify({ id: source.id, count, first: listed.data.data[0].event }));
}

const missing = await client.GET("/v1/sources/{id}", { params: { path: { id: "dc_missing" } } });
console.log(JSON.stringify({ missing: missing.response.status, code: missing.error?.code }));
`;

describe("OpenAPI document: valid, complete, and a typed client generated from it works (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  let doc: any;

  before(async () => {
    await server.start();
    const r = await server.anonymous().get("/v1/openapi.json");
    expect(r.status).to.equal(200);
    doc = r.body;
  });
  after(() => server.stop());

  it("passes Redocly's recommended rules without an error", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(doc), config });
    const errors = problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(errors).to.deep.equal([]);
  });

  it("documents every route, the source endpoints, SSE, probes and itself, with responses and errors", () => {
    for (const [p, method] of [
      ["/e/{id}", "post"],
      ["/e/{id}/{path}", "get"],
      ["/sources/{id}/sse", "get"],
      ["/v1/sources/{id}/stream_tokens", "post"],
      ["/v1/sources/{id}/logs", "get"],
      ["/v1/sources/{id}/run", "post"],
      ["/v1/openapi.json", "get"],
      ["/healthz", "get"],
      ["/readyz", "get"],
      ["/metrics", "get"],
    ]) {
      expect(doc.paths[p]?.[method], `${method} ${p}`).to.be.an("object");
    }
    for (const [p, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const ok = Object.entries<any>(op.responses).filter(([status]) => /^2/.test(status));
        expect(ok.length, `${method} ${p} has a success response`).to.be.greaterThan(0);
        for (const [status, response] of ok) {
          if (status === "204" || (status === "202" && !response.content)) continue;
          expect(response.content, `${method} ${p} ${status} has content`).to.be.an("object");
        }
      }
    }
    const sse = doc.paths["/sources/{id}/sse"].get.responses["200"].content["text/event-stream"];
    expect(sse.schema.type).to.equal("string");
    const create = doc.paths["/v1/sources"].post.responses;
    for (const status of ["400", "401", "413", "415", "429"])
      expect(create[status]?.content["application/json"].schema.$ref, status).to.equal("#/components/schemas/Error");
    expect(doc.paths["/readyz"].get.responses["503"]).to.be.an("object");
    expect(Object.keys(doc.components.schemas)).to.include.members([
      "Source",
      "Component",
      "EventSummary",
      "Webhook",
      "Subscription",
      "User",
      "RunLog",
      "Error",
      "StreamToken",
    ]);
  });

  it("generates a typed client that compiles and calls the live server", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-typed-client-"));
    try {
      fs.writeFileSync(path.join(dir, "schema.ts"), astToString(await openapiTS(doc)));
      fs.writeFileSync(path.join(dir, "client.ts"), CLIENT);
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
      fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(dir, "node_modules"), "dir");
      fs.writeFileSync(
        path.join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            outDir: "out",
            skipLibCheck: true,
            types: ["node"],
          },
          files: ["client.ts", "schema.ts"],
        }),
      );
      const tsc = spawnSync(process.execPath, [path.join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", dir], {
        encoding: "utf8",
      });
      expect(tsc.status, tsc.stdout + tsc.stderr).to.equal(0);

      const run = spawnSync(process.execPath, [path.join(dir, "out", "client.js")], {
        encoding: "utf8",
        env: { ...process.env, HEADWATER_URL: server.url, HEADWATER_KEY: server.bootstrapKey },
        timeout: 60_000,
      });
      expect(run.status, run.stdout + run.stderr).to.equal(0);
      const [listed, missing] = run.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(listed.id).to.match(/^dc_/);
      expect(listed.count).to.equal(1);
      expect(listed.first.body).to.deep.equal({ typed: true });
      expect(missing).to.deep.equal({ missing: 404, code: "not_found" });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
