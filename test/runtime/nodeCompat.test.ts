// The Node compatibility layer against Node's own results: process, the built-ins bundled on
// demand (stream, zlib, path, os, string_decoder, assert, http/https over the guarded bridge, fs on
// the run's /tmp) and axios streams. Real isolates, real loopback servers.
import { expect } from "chai";
import crypto from "node:crypto";
import zlib from "node:zlib";
import { startRuntime, startServer, invocation, prepareCode, type TestServer } from "./support.js";
import { ComponentValidationError, type Runtime } from "../../src/runtime/index.js";

const source = (body: string, imports = "") => `${imports}
export default { name: "compat", version: "1.0.0", props: { db: "$.service.db" }, async run(event) { ${body} } };`;

describe("runtime: Node compatibility layer", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let server: TestServer;

  before(async () => {
    runtime = await startRuntime({ workers: 1, allowPrivateNetworks: true, timeoutMs: 20_000, memoryMb: 128 });
    server = await startServer((req, res) => {
      if (req.url === "/gzip") {
        res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
        res.end(zlib.gzipSync("compressed hello"));
      } else if (req.url === "/redirect") {
        res.writeHead(302, { location: "/plain" });
        res.end();
      } else if (req.url === "/echo") {
        res.writeHead(201, { "content-type": "application/json", "x-multi": ["a", "b"] });
        res.end(JSON.stringify({ method: req.method, headers: req.headers }));
      } else {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("plain body");
      }
    });
  });
  after(async () => {
    await server.close();
    await runtime.close();
  });

  async function run(code: string, over: Record<string, unknown> = {}) {
    const prepared = await prepareCode(runtime, code);
    const outcome = await runtime.invoke(invocation(prepared, over));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    return outcome.emits[0]?.event as any;
  }

  it("process: the documented env, harmless fields, nothing of the host", async () => {
    const e = await run(
      source(`
      const ticks = [];
      process.nextTick(() => ticks.push("tick"));
      await null;
      this.$emit({
        env: process.env, cwd: process.cwd(), platform: process.platform, version: process.version,
        hr: process.hrtime().length, big: typeof process.hrtime.bigint(), ticks,
        exit: (() => { try { process.exit(1); return "exited"; } catch (e) { return e.message; } })(),
        binding: (() => { try { process.binding("fs"); return "bound"; } catch (e) { return e.message; } })(),
        same: process === (await import("process")).default,
      });`),
    );
    expect(e.env).to.deep.equal({ PD_COMPONENT: "1", NODE_ENV: "production", TMPDIR: "/tmp" });
    expect(e).to.include({ cwd: "/tmp", platform: "linux", version: process.version, hr: 2, big: "bigint" });
    expect(e.ticks).to.deep.equal(["tick"]);
    expect(e.exit).to.match(/not available in the sandbox/);
    expect(e.binding).to.match(/not available in the sandbox/);
    expect(e.same).to.equal(true);
  });

  it("path, os, string_decoder, assert, util and events behave as Node's", async () => {
    const e = await run(
      source(
        `
      const decoder = new StringDecoder("utf8");
      const euro = Buffer.from("€");
      const split = decoder.write(euro.subarray(0, 1)) + decoder.write(euro.subarray(1)) + decoder.end();
      let failed;
      try { assert.deepStrictEqual({ a: 1 }, { a: 2 }); } catch (err) { failed = err.code; }
      this.$emit({
        joined: path.join("/tmp", "a", "..", "b", "c.txt"), ext: path.extname("x/y.tar.gz"), rel: path.resolve("file"),
        tmp: os.tmpdir(), eol: os.EOL, split, failed, strictOk: (() => { strict.equal(1, 1); return true; })(),
      });`,
        `import path from "path"; import os from "node:os"; import { StringDecoder } from "string_decoder";
         import assert from "assert"; import strict from "assert/strict";`,
      ),
    );
    expect(e).to.deep.equal({
      joined: "/tmp/b/c.txt",
      ext: ".gz",
      rel: "/tmp/file",
      tmp: "/tmp",
      eol: "\n",
      split: "€",
      failed: "ERR_ASSERTION",
      strictOk: true,
    });
  });

  it("stream: Readable, Transform, pipeline and async iteration", async () => {
    const e = await run(
      source(
        `
      const upper = new Transform({ transform(chunk, _enc, cb) { cb(null, chunk.toString().toUpperCase()); } });
      const out = [];
      const sink = new Writable({ write(chunk, _enc, cb) { out.push(chunk.toString()); cb(); } });
      await pipeline(Readable.from(["a", "b", "c"]), upper, sink);
      const iterated = [];
      for await (const x of Readable.from([1, 2, 3])) iterated.push(x);
      this.$emit({ out, iterated, legacy: typeof Stream === "function" && typeof Stream.Readable === "function" });`,
        `import Stream, { Readable, Transform, Writable } from "stream"; import { pipeline } from "stream/promises";`,
      ),
    );
    expect(e).to.deep.equal({ out: ["A", "B", "C"], iterated: [1, 2, 3], legacy: true });
  });

  it("zlib: sync, callback and stream forms interoperate with Node's zlib; Brotli explains itself", async () => {
    const fromNode = zlib.gzipSync("from node").toString("base64");
    const e = await run(
      source(
        `
      const ours = zlib.gzipSync("from the sandbox").toString("base64");
      const theirs = zlib.gunzipSync(Buffer.from(event.gz, "base64")).toString();
      const inflated = await new Promise((resolve, reject) => zlib.inflate(zlib.deflateSync("cb form"), (err, out) => err ? reject(err) : resolve(out.toString())));
      const chunks = [];
      const gunzip = zlib.createGunzip();
      gunzip.on("data", (c) => chunks.push(c));
      const streamed = new Promise((resolve) => gunzip.on("end", () => resolve(Buffer.concat(chunks).toString())));
      gunzip.end(zlib.gzipSync("streamed"));
      let brotli;
      try { zlib.brotliDecompressSync(Buffer.alloc(1)); } catch (err) { brotli = err.message; }
      this.$emit({ ours, theirs, inflated, streamed: await streamed, brotli, level: zlib.constants.Z_BEST_COMPRESSION });`,
        `import zlib from "zlib";`,
      ),
      { event: { gz: fromNode } },
    );
    expect(zlib.gunzipSync(Buffer.from(e.ours, "base64")).toString()).to.equal("from the sandbox");
    expect(e).to.include({ theirs: "from node", inflated: "cb form", streamed: "streamed", level: 9 });
    expect(e.brotli).to.match(/Brotli is not available in the sandbox/);
  });

  it("crypto: secret KeyObjects (createSecretKey, export, equals) key createHmac as in Node; asymmetric keys explain themselves", async () => {
    // The same probe runs against the sandbox's crypto and against Node's.
    const probe = `
      const { KeyObject, createSecretKey, createHmac, createPrivateKey, createPublicKey, timingSafeEqual } = crypto;
      const caught = (f) => { try { f(); return "no error"; } catch (err) { return err.code; } };
      const key = createSecretKey(Buffer.from("s3cret"));
      const copied = Buffer.from("abc");
      const copy = createSecretKey(copied);
      copied[0] = 0;
      return {
        isKey: key instanceof KeyObject, type: key.type, size: key.symmetricKeySize, asym: [typeof key.asymmetricKeyType, typeof key.asymmetricKeyDetails],
        exported: key.export().toString("hex"), isBuffer: Buffer.isBuffer(key.export()), jwk: key.export({ format: "jwk" }),
        equals: key.equals(createSecretKey("czNjcmV0", "base64")), differs: key.equals(createSecretKey(new Uint8Array([1, 2]))),
        empty: createSecretKey(new ArrayBuffer(0)).symmetricKeySize, tag: Object.prototype.toString.call(key), copy: copy.export().toString(),
        hmacKey: createHmac("sha256", key).update("msg").digest("hex"),
        hmacText: createHmac("sha256", "s3cret").update("msg").digest("hex"),
        hmacEncoded: createHmac("sha256", "czNjcmV0", { encoding: "base64" }).update("msg").digest("hex"),
        construct: caught(() => new KeyObject("secret")), notAKey: caught(() => key.equals({})),
        badSecret: caught(() => createSecretKey(123)), fromKey: caught(() => createSecretKey(key)), badHmacKey: caught(() => createHmac("sha256", 5)),
        tse: [timingSafeEqual(new DataView(new Uint8Array([1, 2]).buffer), new Uint8Array([1, 2])), caught(() => timingSafeEqual(Buffer.alloc(1), Buffer.alloc(2)))],
        asymmetric: [caught(() => createPrivateKey("not a pem")), caught(() => createPublicKey("not a pem"))],
      };`;
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the probe is the test's own text, run by Node as the reference
    const fromNode = new Function("crypto", "Buffer", probe)(crypto, Buffer) as Record<string, unknown>;
    const e = await run(
      source(
        `
      const result = ((crypto, Buffer) => { ${probe} })(crypto, Buffer);
      let message;
      try { crypto.createPrivateKey("-----BEGIN PRIVATE KEY-----"); } catch (err) { message = err.message; }
      this.$emit({ ...result, message, named: createSecretKey === crypto.createSecretKey && KeyObject === crypto.KeyObject });`,
        `import crypto, { createSecretKey, KeyObject } from "node:crypto";`,
      ),
    );
    expect(fromNode.hmacKey).to.equal(crypto.createHmac("sha256", "s3cret").update("msg").digest("hex"));
    // Node fails to parse the PEM; the sandbox has no asymmetric keys at all, and says so.
    expect(fromNode.asymmetric).to.deep.equal(["ERR_OSSL_UNSUPPORTED", "ERR_OSSL_UNSUPPORTED"]);
    expect(e.asymmetric).to.deep.equal(["ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM"]);
    expect(e.message).to.match(/createPrivateKey: asymmetric keys .* are not supported in the Headwater sandbox/);
    const { asymmetric: _a, message: _m, named, ...rest } = e;
    const { asymmetric: _b, ...node } = fromNode;
    expect(named).to.equal(true);
    expect(rest).to.deep.equal(node);
  });

  it("http and https clients go through the guarded bridge: raw bodies, no redirects followed, IncomingMessage streams", async () => {
    const e = await run(
      source(
        `
      const get = (url) => new Promise((resolve, reject) => {
        http.get(url, (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        }).on("error", reject);
      });
      const gz = await get(event.base + "/gzip");
      const redirect = await get(event.base + "/redirect");
      const posted = await new Promise((resolve, reject) => {
        const req = http.request({ hostname: "127.0.0.1", port: event.port, path: "/echo", method: "POST", headers: { "x-test": 1 } }, (res) => {
          res.setEncoding("utf8");
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode, multi: res.headers["x-multi"], body: JSON.parse(text) }));
        });
        req.on("error", reject);
        req.write("hello ");
        req.end("world");
      });
      const refused = await new Promise((resolve) => https.get("https://127.0.0.1:1/", () => resolve("answered")).on("error", (err) => resolve(err.code)));
      this.$emit({
        gzStatus: gz.status, encoding: gz.headers["content-encoding"], text: zlib.gunzipSync(gz.body).toString(),
        redirect: { status: redirect.status, location: redirect.headers.location }, posted, refused,
      });`,
        `import http from "http"; import https from "node:https"; import zlib from "zlib";`,
      ),
      { event: { base: server.url, port: Number(new URL(server.url).port) } },
    );
    expect(e).to.deep.include({ gzStatus: 200, encoding: "gzip", text: "compressed hello", redirect: { status: 302, location: "/plain" } });
    expect(e.posted.status).to.equal(201);
    expect(e.posted.multi).to.equal("a, b");
    expect(e.posted.body.method).to.equal("POST");
    expect(e.posted.body.headers["x-test"]).to.equal("1");
    expect(e.refused).to.equal("ECONNREFUSED");
  });

  it("http requests to private addresses are refused when the runtime does not allow them; the run goes on after the refusal", async () => {
    const guarded = await startRuntime({ workers: 1, allowPrivateNetworks: false });
    try {
      const prepared = await prepareCode(
        guarded,
        source(
          `const code = await new Promise((resolve) => http.get(event.url, () => resolve("answered")).on("error", (err) => resolve(err.code + " " + err.message)));
           this.$emit({ code });`,
          `import http from "http";`,
        ),
      );
      // The refusal comes back at once: what the component does after it still belongs to its run
      // (its emits once raced the run's result and were lost), every time.
      const inv = invocation(prepared, { event: { url: `${server.url}/plain` } });
      for (let i = 0; i < 20; i++) {
        const outcome = await guarded.invoke({ ...inv, invocationId: `refused-${i}` });
        expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
        expect(outcome.emits, `run ${i}: ${JSON.stringify(outcome)}`).to.have.length(1);
        expect((outcome.emits[0].event as { code: string }).code).to.match(/^EACCES .*(private|loopback|not allowed|refused)/i);
      }
    } finally {
      await guarded.close();
    }
  });

  it("fs works on the run's /tmp only, is bounded, and is emptied when the run ends", async () => {
    const prepared = await prepareCode(
      runtime,
      source(
        `
      const before = fs.existsSync("/tmp/state.txt");
      fs.mkdirSync("/tmp/a/b", { recursive: true });
      fs.writeFileSync("/tmp/a/b/state.txt", "one");
      fs.appendFileSync("a/b/state.txt", ",two");
      await fsp.writeFile("/tmp/a/other.json", JSON.stringify({ n: 1 }));
      const streamed = await new Promise((resolve, reject) => {
        const out = fs.createWriteStream("/tmp/a/stream.txt");
        out.on("finish", () => resolve(fs.readFileSync("/tmp/a/stream.txt", "utf8")));
        out.on("error", reject);
        out.write("x"); out.end("y");
      });
      const denied = (() => { try { fs.readFileSync("/etc/passwd"); return "read"; } catch (err) { return err.code; } })();
      const climbing = (() => { try { fs.writeFileSync("/tmp/../etc/x", "no"); return "wrote"; } catch (err) { return err.code; } })();
      const missing = await new Promise((resolve) => fs.readFile("/tmp/none", (err) => resolve(err.code)));
      const big = Buffer.alloc(40 * 1024 * 1024);
      fs.writeFileSync("/tmp/big1", big);
      const full = (() => { try { fs.writeFileSync("/tmp/big2", big); return "wrote"; } catch (err) { return err.code; } })();
      this.$emit({
        before, content: fs.readFileSync("/tmp/a/b/state.txt", "utf8"), listing: fs.readdirSync("/tmp/a").sort(),
        json: JSON.parse(await fsp.readFile("/tmp/a/other.json", "utf8")), streamed, denied, climbing, missing, full,
        isDir: fs.statSync("/tmp/a").isDirectory(), size: fs.statSync("/tmp/a/b/state.txt").size,
      });`,
        `import fs from "fs"; import fsp from "fs/promises";`,
      ),
    );
    const inv = invocation(prepared);
    const first = await runtime.invoke(inv);
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    expect(first.emits[0].event).to.deep.equal({
      before: false,
      content: "one,two",
      listing: ["b", "other.json", "stream.txt"],
      json: { n: 1 },
      streamed: "xy",
      denied: "EACCES",
      climbing: "EACCES",
      missing: "ENOENT",
      full: "ENOSPC",
      isDir: true,
      size: 7,
    });
    // The same warm isolate: the previous run's files are gone.
    const second = await runtime.invoke({ ...inv, invocationId: "second" });
    expect(second.warm).to.equal(true);
    expect((second.emits[0].event as { before: boolean }).before).to.equal(false);
  });

  it("axios responseType stream gives a readable body, with or without the stream module in the bundle", async () => {
    for (const imports of [`import axios from "axios";`, `import axios from "axios"; import "stream";`]) {
      const e = await run(
        source(
          `
        const res = await axios.get(event.url, { responseType: "stream" });
        const piped = await new Promise((resolve) => {
          const chunks = [];
          res.data.on("data", (c) => chunks.push(Buffer.from(c)));
          res.data.on("end", () => resolve(Buffer.concat(chunks).toString()));
        });
        const again = await axios.get(event.url, { responseType: "stream" });
        let iterated = "";
        for await (const chunk of again.data) iterated += chunk.toString();
        this.$emit({ piped, iterated, pipe: typeof res.data.pipe });`,
          imports,
        ),
        { event: { url: `${server.url}/plain` } },
      );
      expect(e, imports).to.deep.equal({ piped: "plain body", iterated: "plain body", pipe: "function" });
    }
  });

  it("modules the sandbox cannot offer still fail the save, naming the module", async () => {
    for (const name of ["child_process", "net", "worker_threads"]) {
      const error = await prepareCode(runtime, source(`require("${name}");`)).catch((e: unknown) => e);
      expect(error, name).to.be.instanceOf(ComponentValidationError);
      expect((error as ComponentValidationError).problems[0].message).to.match(
        new RegExp(`"${name}", which is not available in the sandbox`),
      );
    }
  });

  it("heavy polyfills are bundled only into components that import them", async () => {
    const plain = await prepareCode(runtime, source(`this.$emit({ ok: true });`));
    const withStream = await prepareCode(runtime, source(`this.$emit({ ok: typeof Readable });`, `import { Readable } from "stream";`));
    expect(plain.bundle.length).to.be.below(5_000);
    expect(withStream.bundle.length).to.be.above(50_000);
  });
});
