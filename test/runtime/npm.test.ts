// npm imports with versions in the specifier, installed from the real registry into the
// content-addressed cache, then reused offline.
import { expect } from "chai";
import { createHmac } from "node:crypto";
import { promises as fs } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ComponentValidationError, prepareComponent, type Runtime } from "../../src/runtime/index.js";
import { invocation, startRuntime, startServer, tempDir } from "./support.js";

// Nothing listens on port 9 of loopback: any attempt to reach this registry fails at once.
const UNREACHABLE_REGISTRY = "http://127.0.0.1:9/";

describe("runtime: npm packages", function () {
  this.timeout(240_000);
  let runtime: Runtime;
  let cacheDir: string;
  before(async () => {
    cacheDir = await tempDir("npm");
    runtime = await startRuntime({ workers: 1, cacheDir });
  });
  after(async () => runtime.close());

  const PINNED = `import get from "lodash.get@4.4.2";
    export default { name: "pinned", version: "1", async run(e) { this.$emit({ v: get(e, "a.b.c", "none") }); } };`;

  it("bundles a pinned pure-JS package (import get from 'lodash.get@4.4.2')", async () => {
    const prepared = await prepareComponent({ code: PINNED }, { runtime });
    expect(prepared.packages).to.deep.equal([{ name: "lodash.get", version: "4.4.2" }]);
    const outcome = await runtime.invoke(invocation(prepared, { event: { a: { b: { c: 42 } } } }));
    expect(outcome.emits[0]?.event).to.deep.equal({ v: 42 });
    // Stored under the package's integrity, indexed by version.
    const index = JSON.parse(await fs.readFile(path.join(cacheDir, "npm", "index", "lodash.get.json"), "utf8")) as {
      versions: Record<string, string>;
    };
    const key = index.versions["4.4.2"];
    expect(key).to.match(/^sha512-[0-9a-f]{128}$/);
    const manifest = JSON.parse(await fs.readFile(path.join(cacheDir, "npm", "store", key, "headwater-package.json"), "utf8")) as {
      name: string;
      version: string;
    };
    expect(manifest).to.include({ name: "lodash.get", version: "4.4.2" });
  });

  it("resolves a range (require('uuid@^9')) to the newest matching version", async () => {
    const prepared = await prepareComponent(
      {
        code: `const { v4, validate } = require("uuid@^9"); module.exports = { name: "range", version: "1", async run() { const id = v4(); this.$emit({ id, valid: validate(id) }); } };`,
      },
      { runtime },
    );
    const uuid = prepared.packages.find((p) => p.name === "uuid");
    expect(uuid?.version).to.match(/^9\.\d+\.\d+$/);
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect((outcome.emits[0]?.event as { valid: boolean }).valid).to.equal(true);
  });

  it("bundles a scoped package with its dependencies", async () => {
    const prepared = await prepareComponent(
      {
        code: `import slugify from "@sindresorhus/slugify@2.2.1"; export default { name: "scoped", version: "1", async run(e) { this.$emit({ slug: slugify(e.title) }); } };`,
      },
      { runtime },
    );
    expect(prepared.packages).to.deep.equal([{ name: "@sindresorhus/slugify", version: "2.2.1" }]);
    const title = "Déjà Vu in Zürich!";
    const outcome = await runtime.invoke(invocation(prepared, { event: { title } }));
    // The same package run by Node itself, from the cache, gives the reference answer.
    const index = JSON.parse(
      await fs.readFile(path.join(cacheDir, "npm", "index", encodeURIComponent("@sindresorhus/slugify") + ".json"), "utf8"),
    ) as { versions: Record<string, string> };
    const entry = path.join(cacheDir, "npm", "store", index.versions["2.2.1"], "node_modules", "@sindresorhus", "slugify", "index.js");
    const nodeSlugify = ((await import(pathToFileURL(entry).href)) as { default: (s: string) => string }).default;
    expect(outcome.emits[0]?.event).to.deep.equal({ slug: nodeSlugify(title) });
    expect(nodeSlugify(title)).to.match(/^deja-vu-in-z/);
  });

  it("signs and verifies HS256 tokens with jsonwebtoken@9.0.2 (crypto KeyObject, createSecretKey), as Node does", async () => {
    const prepared = await prepareComponent(
      {
        code: `import jwt from "jsonwebtoken@9.0.2";
          import { createSecretKey } from "crypto";
          export default { name: "jwt", version: "1", async run(e) {
            const token = jwt.sign({ a: 1, iat: 1700000000 }, "secret", { algorithm: "HS256" });
            const verified = jwt.verify(token, "secret", { algorithms: ["HS256"] });
            const fromHost = jwt.verify(e.hostToken, createSecretKey(Buffer.from("secret")));
            const failure = (f) => { try { f(); return "no error"; } catch (err) { return err.name + ": " + err.message; } };
            this.$emit({
              token, verified, fromHost,
              withKey: jwt.sign({ a: 1, iat: 1700000000 }, createSecretKey(Buffer.from("secret")), { algorithm: "HS512" }),
              wrongSecret: failure(() => jwt.verify(token, "other")),
              rs256: failure(() => jwt.sign({ a: 1 }, "secret", { algorithm: "RS256" })),
            });
          } };`,
      },
      { runtime },
    );
    expect(prepared.packages).to.deep.equal([{ name: "jsonwebtoken", version: "9.0.2" }]);
    // The reference: the same package, from the cache, run by Node with Node's crypto.
    const index = JSON.parse(await fs.readFile(path.join(cacheDir, "npm", "index", "jsonwebtoken.json"), "utf8")) as {
      versions: Record<string, string>;
    };
    const nodeJwt = createRequire(path.join(cacheDir, "npm", "store", index.versions["9.0.2"], "node_modules", "jsonwebtoken", "index.js"))(
      "./index.js",
    ) as {
      sign(payload: object, secret: string, options: object): string;
    };
    const hostToken = nodeJwt.sign({ b: "from the host", iat: 1700000001 }, "secret", { algorithm: "HS256" });
    const outcome = await runtime.invoke(invocation(prepared, { event: { hostToken } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const e = outcome.emits[0]?.event as Record<string, unknown>;
    // And by hand: base64url(header).base64url(payload).base64url(HMAC-SHA256).
    const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const signingInput = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ a: 1, iat: 1700000000 })}`;
    const byHand = `${signingInput}.${createHmac("sha256", "secret").update(signingInput).digest("base64url")}`;
    expect(e).to.deep.equal({
      token: nodeJwt.sign({ a: 1, iat: 1700000000 }, "secret", { algorithm: "HS256" }),
      verified: { a: 1, iat: 1700000000 },
      fromHost: { b: "from the host", iat: 1700000001 },
      withKey: nodeJwt.sign({ a: 1, iat: 1700000000 }, "secret", { algorithm: "HS512" }),
      wrongSecret: "JsonWebTokenError: invalid signature",
      rs256: "Error: secretOrPrivateKey must be an asymmetric key when using RS256",
    });
    expect(e.token).to.equal(byHand);
  });

  it("serves form-data (any version) with Headwater's own Node API equivalent, which takes standard Blobs too", async () => {
    const prepared = await prepareComponent(
      {
        code: `import FormData from "form-data@4.0.6";
          export default { name: "form", version: "1", async run() {
            const form = new FormData();
            form.setBoundary("B");
            form.append("a", "1");
            form.append("file", new Blob(["content"], { type: "text/plain" }), "f.txt");
            form.append("named", new File(["x"], "n.csv", { type: "text/csv" }));
            this.$emit({ standard: FormData === globalThis.FormData, body: form.getBuffer().toString(), headers: form.getHeaders() });
          } };`,
      },
      { runtime },
    );
    expect(prepared.packages, "nothing installed from npm").to.deep.equal([]);
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0]?.event).to.deep.equal({
      standard: false,
      body:
        '--B\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n' +
        '--B\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\nContent-Type: text/plain\r\n\r\ncontent\r\n' +
        '--B\r\nContent-Disposition: form-data; name="named"; filename="n.csv"\r\nContent-Type: text/csv\r\n\r\nx\r\n' +
        "--B--\r\n",
      headers: { "content-type": "multipart/form-data; boundary=B" },
    });
  });

  it("loads stripe@23.1.0 (its worker build extends Event and EventTarget) and constructs a client without a network call", async () => {
    const prepared = await prepareComponent(
      {
        code: `import Stripe from "stripe@23.1.0";
          const stripe = new Stripe("sk_test_headwater", { maxNetworkRetries: 0 });
          export default { name: "stripe", version: "1", async run() {
            this.$emit({ customers: typeof stripe.customers.create, webhooks: typeof stripe.webhooks.constructEventAsync });
          } };`,
      },
      { runtime },
    );
    expect(prepared.packages.map((p) => p.name)).to.include("stripe");
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0]?.event).to.deep.equal({ customers: "function", webhooks: "function" });
  });

  it("sends a command with @aws-sdk/client-sqs@3.1175.0 (its fetch handler uses Request, ReadableStream and Response.body)", async () => {
    const server = await startServer((req, res) => {
      res.writeHead(200, { "content-type": "application/x-amz-json-1.0" });
      res.end(JSON.stringify({ QueueUrls: ["https://sqs.example/1/q"] }));
    });
    // Its own runtime: this one reaches the loopback server.
    const local = await startRuntime({ workers: 1, cacheDir, allowPrivateNetworks: true });
    try {
      const prepared = await prepareComponent(
        {
          code: `import { SQSClient, ListQueuesCommand } from "@aws-sdk/client-sqs@3.1175.0";
            export default { name: "sqs", version: "1", async run(e) {
              const client = new SQSClient({ region: "us-east-1", endpoint: e.url, credentials: { accessKeyId: "a", secretAccessKey: "b" } });
              const out = await client.send(new ListQueuesCommand({}));
              this.$emit({ urls: out.QueueUrls });
            } };`,
        },
        { runtime: local },
      );
      const outcome = await local.invoke(invocation(prepared, { event: { url: server.url } }));
      expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
      expect(outcome.emits[0]?.event).to.deep.equal({ urls: ["https://sqs.example/1/q"] });
      expect(server.requests[0]).to.include({ method: "POST", body: "{}" });
      expect(server.requests[0].headers["x-amz-target"]).to.equal("AmazonSQS.ListQueues");
      expect(server.requests[0].headers["authorization"]).to.match(/^AWS4-HMAC-SHA256 Credential=a\//);
    } finally {
      await local.close();
      await server.close();
    }
  });

  it("fails the save with a clear error for a package that does not exist", async () => {
    const name = "headwater-no-such-package-7c1e9b2f";
    const err = await prepareComponent(
      { code: `import x from "${name}@1.0.0"; export default { name: "m", version: "1", async run() { x(); } };` },
      { runtime },
    ).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ComponentValidationError);
    const message = (err as ComponentValidationError).problems[0].message;
    expect(message).to.include(`npm package "${name}@1.0.0" could not be installed`);
    expect(message).to.match(/not found|404/i);
  });

  it("fails the save naming a package that needs Node modules the sandbox lacks", async () => {
    const err = await prepareComponent(
      { code: `import fse from "fs-extra@11.2.0"; export default { name: "f", version: "1", async run() { fse.readJsonSync("/x"); } };` },
      { runtime },
    ).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ComponentValidationError);
    const messages = (err as ComponentValidationError).problems.map((p) => p.message).join(" | ");
    expect(messages).to.match(/npm package "(fs-extra|graceful-fs)" imports the Node module "\w+", which is not available in the sandbox/);
  });

  it("reuses the cache offline: a second prepare never reaches the registry", async () => {
    const offline = { runtime, npmRegistry: UNREACHABLE_REGISTRY };
    // An empty cache with the unreachable registry fails: the registry option is really used.
    const emptyCache = await tempDir("npm-empty");
    const miss = await prepareComponent({ code: PINNED }, { ...offline, cacheDir: emptyCache }).catch((e: unknown) => e);
    expect(miss).to.be.instanceOf(ComponentValidationError);
    expect((miss as ComponentValidationError).problems[0].message).to.include('npm package "lodash.get@4.4.2" could not be installed');
    // The warm cache serves the pinned version and the ranges without the registry.
    const first = await prepareComponent({ code: PINNED }, { runtime });
    const again = await prepareComponent({ code: PINNED }, offline);
    expect(again.bundle).to.equal(first.bundle);
    const range = await prepareComponent(
      { code: `import { v4 } from "uuid@^9"; export default { name: "r", version: "1", async run() { this.$emit({ id: v4() }); } };` },
      offline,
    );
    expect(range.packages[0]?.name).to.equal("uuid");
    const outcome = await runtime.invoke(invocation(again, { event: { a: { b: { c: "offline" } } } }));
    expect(outcome.emits[0]?.event).to.deep.equal({ v: "offline" });
  });
});
