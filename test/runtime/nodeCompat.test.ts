// The Node compatibility layer against Node's own results: process, the built-ins bundled on
// demand (stream, zlib, path, os, string_decoder, assert, http/https over the guarded bridge, fs on
// the run's /tmp) and axios streams. Real isolates, real loopback servers.
import { expect } from "chai";
import crypto from "node:crypto";
import vm from "node:vm";
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
    server = await startServer((req, res, body) => {
      if (req.url === "/gzip") {
        res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" });
        res.end(zlib.gzipSync("compressed hello"));
      } else if (req.url === "/redirect") {
        res.writeHead(302, { location: "/plain" });
        res.end();
      } else if (req.url === "/body") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ method: req.method, type: req.headers["content-type"] ?? null, body }));
      } else if (req.url === "/api/v1/sites") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify([{ id: "s1", name: "docs", auth: req.headers.authorization ?? null }]));
      } else if (req.url === "/collections") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ result: { collections: [{ name: "docs" }] }, status: "ok", time: 0 }));
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
        tag: Object.prototype.toString.call(process),
      });`),
    );
    expect(e.env).to.deep.equal({ PD_COMPONENT: "1", NODE_ENV: "production", TMPDIR: "/tmp" });
    expect(e).to.include({ cwd: "/tmp", platform: "linux", version: process.version, hr: 2, big: "bigint" });
    expect(e.ticks).to.deep.equal(["tick"]);
    expect(e.exit).to.match(/not available in the sandbox/);
    expect(e.binding).to.match(/not available in the sandbox/);
    expect(e.same).to.equal(true);
    // Node's tag: axios 0.x (bundled inside salesforce-webhooks) picks its Node adapter by it.
    expect(e.tag).to.equal("[object process]");
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

  it("TextDecoder and TextEncoder answer as Node's: streaming, fatal, byte order marks, UTF-16 and windows-1252, labels, encodeInto", async () => {
    // One battery, run in the sandbox and here with Node's own classes: the answers must be equal.
    const battery = `(async () => {
      const attempt = (fn) => { try { return fn(); } catch (e) { return { error: e.name, code: e.code }; } };
      const bytes = (...b) => new Uint8Array(b);
      const utf8 = new TextEncoder().encode("h\u00e9llo \ud83d\ude00 w\u00f6rld \u20ac");
      const splits = [];
      for (let at = 0; at <= utf8.length; at++) {
        const d = new TextDecoder();
        splits.push(d.decode(utf8.subarray(0, at), { stream: true }) + d.decode(utf8.subarray(at)));
      }
      const three = new TextDecoder();
      const pieces = [three.decode(utf8.subarray(0, 7), { stream: true }), three.decode(utf8.subarray(7, 9), { stream: true }), three.decode(utf8.subarray(9), { stream: true }), three.decode()];
      const utf16 = bytes(0xff, 0xfe, 0x68, 0, 0xe9, 0, 0x3d, 0xd8, 0x00, 0xde, 0x21, 0);
      const utf16Splits = [];
      for (let at = 0; at <= utf16.length; at++) {
        const d = new TextDecoder("utf-16le");
        utf16Splits.push(d.decode(utf16.subarray(0, at), { stream: true }) + d.decode(utf16.subarray(at)));
      }
      const chunks = [];
      const stream = new Blob([utf8]).stream().pipeThrough(new TextDecoderStream());
      for await (const chunk of stream) chunks.push(chunk);
      const into = (text, size) => { const dest = new Uint8Array(size); const r = new TextEncoder().encodeInto(text, dest); return [r.read, r.written, Array.from(dest)]; };
      return {
        splits: [...new Set(splits)],
        pieces: pieces.join(""),
        cut: new TextDecoder().decode(bytes(0xe2, 0x82)),
        invalid: new TextDecoder().decode(bytes(0x61, 0xff, 0x62, 0xc3, 0x28)),
        fatal: attempt(() => new TextDecoder("utf-8", { fatal: true }).decode(bytes(0x61, 0xff))),
        fatalCut: attempt(() => new TextDecoder("utf-8", { fatal: true }).decode(bytes(0xe2, 0x82))),
        fatalReplacementChar: attempt(() => new TextDecoder("utf-8", { fatal: true }).decode(bytes(0xef, 0xbf, 0xbd))),
        bom: new TextDecoder().decode(bytes(0xef, 0xbb, 0xbf, 0x41)),
        bomKept: new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes(0xef, 0xbb, 0xbf, 0x41)),
        bomTwice: (() => { const d = new TextDecoder(); return d.decode(bytes(0xef, 0xbb, 0xbf, 0x41), { stream: true }) + d.decode(bytes(0xef, 0xbb, 0xbf, 0x42)); })(),
        bomAgain: (() => { const d = new TextDecoder(); return [d.decode(bytes(0xef, 0xbb, 0xbf, 0x41)), d.decode(bytes(0xef, 0xbb, 0xbf, 0x42))]; })(),
        utf16Splits: [...new Set(utf16Splits)],
        utf16be: new TextDecoder("utf-16be").decode(bytes(0xfe, 0xff, 0, 0x68, 0xd8, 0x3d, 0xde, 0)),
        utf16Odd: new TextDecoder("utf-16le").decode(bytes(0x68, 0, 0x69)),
        utf16Lone: new TextDecoder("utf-16le").decode(bytes(0x3d, 0xd8, 0x68, 0)),
        utf16Fatal: attempt(() => new TextDecoder("utf-16le", { fatal: true }).decode(bytes(0x3d, 0xd8, 0x68, 0))),
        latin1: new TextDecoder("latin1").decode(Uint8Array.from({ length: 128 }, (_, i) => 128 + i)),
        labels: ["UTF8", " utf-8 ", "unicode-1-1-utf-8", "ascii", "US-ASCII", "iso-8859-1", "latin1", "windows-1252", "utf-16", "ucs-2", "unicode", "utf-16be"].map((l) => new TextDecoder(l).encoding),
        fatalFlag: [new TextDecoder().fatal, new TextDecoder("utf-8", { fatal: true }).fatal],
        streamChunks: chunks.join(""),
        into: [into("h\u00e9llo", 3), into("\ud83d\ude00x", 3), into("\ud83d\ude00x", 4), into("abc", 10)],
      };
    })()`;
    const mine = await run(source(`this.$emit(await ${battery});`));
    const nodes = (await (0, eval)(battery)) as unknown;
    expect(mine).to.deep.equal(JSON.parse(JSON.stringify(nodes)));
    expect(mine.splits).to.have.length(1);
    // An encoding the sandbox lacks says so (Node's full ICU has more than these four).
    const missing = await run(
      source(`try { new TextDecoder("shift_jis"); } catch (e) { this.$emit({ name: e.name, code: e.code, message: e.message }); }`),
    );
    expect(missing).to.deep.include({ name: "RangeError", code: "ERR_ENCODING_NOT_SUPPORTED" });
    expect(missing.message).to.match(/"shift_jis" encoding is not supported in the sandbox/);
  });

  it("util/types (and util.types) answer as Node's; console is the module of the global console", async () => {
    const battery = (types: Record<string, (v: unknown) => boolean>) => {
      const values: unknown[] = [
        new Uint8Array(1),
        new Int16Array(1),
        new Float64Array(1),
        new BigInt64Array(1),
        new DataView(new ArrayBuffer(1)),
        new ArrayBuffer(1),
        new Date(0),
        /x/,
        Promise.resolve(),
        new Map(),
        new Set(),
        new WeakMap(),
        new WeakSet(),
        new Map().keys(),
        new Set().values(),
        new Error("e"),
        new TypeError("t"),
        async () => 1,
        function* gen() {},
        (function* () {})(),
        Object(1),
        Object("s"),
        Object(true),
        Object(Symbol("s")),
        Object(1n),
        1,
        "s",
        null,
        undefined,
        {},
        [],
        (function () {
          // eslint-disable-next-line prefer-rest-params -- an arguments object is the value under test
          return arguments;
        })(),
      ];
      const names = [
        "isUint8Array",
        "isTypedArray",
        "isInt16Array",
        "isFloat64Array",
        "isBigInt64Array",
        "isDataView",
        "isArrayBuffer",
        "isAnyArrayBuffer",
        "isArrayBufferView",
        "isDate",
        "isRegExp",
        "isPromise",
        "isMap",
        "isSet",
        "isWeakMap",
        "isWeakSet",
        "isMapIterator",
        "isSetIterator",
        "isNativeError",
        "isAsyncFunction",
        "isGeneratorFunction",
        "isGeneratorObject",
        "isNumberObject",
        "isStringObject",
        "isBooleanObject",
        "isSymbolObject",
        "isBigIntObject",
        "isBoxedPrimitive",
        "isArgumentsObject",
        "isProxy",
      ];
      return Object.fromEntries(names.map((name) => [name, values.map((v) => types[name](v))]));
    };
    const mine = await run(
      source(
        `const battery = ${battery.toString()};
        this.$emit({ types: battery(types), same: util.types === types || Object.keys(util.types).every((k) => typeof types[k] === "function"),
          console: typeof consoleModule.log === "function" && consoleModule.log === console.log });`,
        `import types from "util/types"; import util from "util"; import consoleModule from "node:console";`,
      ),
    );
    const nodeTypes = (await import("node:util/types")) as unknown as Record<string, (v: unknown) => boolean>;
    expect(mine.types).to.deep.equal(battery(nodeTypes));
    expect(mine).to.deep.include({ same: true, console: true });
    const more = await run(
      source(
        `const log = util.debuglog("pkg"); log("not printed");
        this.$emit({ enabled: log.enabled, debug: typeof util.debug, usv: util.toUSVString("a\\ud800b"),
          stripped: util.stripVTControlCharacters("\\u001b[31mred\\u001b[0m"), formatted: util.formatWithOptions({ colors: true }, "%s=%d", "n", 5) });`,
        `import util from "util";`,
      ),
    );
    expect(more).to.deep.equal({ enabled: false, debug: "function", usv: "a\ufffdb", stripped: "red", formatted: "n=5" });
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

  it("crypto: secret KeyObjects (createSecretKey, export, equals) key createHmac as in Node; a malformed asymmetric key fails as in Node", async () => {
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
      this.$emit({ ...result, named: createSecretKey === crypto.createSecretKey && KeyObject === crypto.KeyObject });`,
        `import crypto, { createSecretKey, KeyObject } from "node:crypto";`,
      ),
    );
    expect(fromNode.hmacKey).to.equal(crypto.createHmac("sha256", "s3cret").update("msg").digest("hex"));
    // Node's OpenSSL fails to parse the PEM, in the sandbox as on Node (asymmetric keys: cryptoKeys.test.ts).
    expect(fromNode.asymmetric).to.deep.equal(["ERR_OSSL_UNSUPPORTED", "ERR_OSSL_UNSUPPORTED"]);
    const { named, ...rest } = e;
    expect(named).to.equal(true);
    expect(rest).to.deep.equal(fromNode);
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

  it("fs.ReadStream, fs.WriteStream and http.ServerResponse are classes libraries test values against; got@11 sends its requests", async () => {
    // got 11 asks \`body instanceof fs.ReadStream\` and \`instanceof http.ServerResponse\` on every request.
    const event = await run(
      source(
        `
      fs.writeFileSync("/tmp/r.txt", "stream me");
      const read = fs.createReadStream("/tmp/r.txt", { encoding: "utf8" });
      let text = "";
      for await (const chunk of read) text += chunk;
      const write = fs.createWriteStream("/tmp/w.txt");
      await new Promise((resolve) => { write.on("finish", resolve); write.end("written"); });
      let constructed;
      try { new http.ServerResponse({}); } catch (err) { constructed = err.message; }
      const answer = await got.post("${server.url}/body", { json: { a: 1 } }).json();
      const direct = new fs.ReadStream("/tmp/r.txt");
      this.$emit({
        classes: [typeof fs.ReadStream, typeof fs.WriteStream, typeof http.ServerResponse],
        read: { isReadStream: read instanceof fs.ReadStream, text, bytesRead: read.bytesRead, path: read.path },
        write: { isWriteStream: write instanceof fs.WriteStream, bytesWritten: write.bytesWritten, file: fs.readFileSync("/tmp/w.txt", "utf8") },
        direct: direct instanceof fs.ReadStream && direct.path,
        notServerResponse: read instanceof http.ServerResponse,
        constructed,
        answer,
      });`,
        `import fs from "fs"; import http from "http"; import got from "got@11.8.6";`,
      ),
    );
    expect(event).to.deep.equal({
      classes: ["function", "function", "function"],
      read: { isReadStream: true, text: "stream me", bytesRead: 9, path: "/tmp/r.txt" },
      write: { isWriteStream: true, bytesWritten: 7, file: "written" },
      direct: "/tmp/r.txt",
      notServerResponse: false,
      constructed: "http.ServerResponse is not available in the sandbox: use an HTTP interface prop ($.interface.http)",
      answer: { method: "POST", type: "application/json", body: '{"a":1}' },
    });
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

  // The same probe runs as a component and in Node (an async function body, its result as JSON).
  const WEB_GLOBALS_PROBE = `
    const out = {};
    const target = new EventTarget();
    const seen = [];
    const h = (e) => seen.push([e.type, e.target === target, e.currentTarget === target, e.eventPhase, e instanceof Event]);
    target.addEventListener("ping", h);
    target.addEventListener("ping", h);
    target.addEventListener("ping", { handleEvent: (e) => seen.push(["object", e.type]) }, { once: true });
    target.addEventListener("ping", (e) => e.preventDefault());
    const ev = new Event("ping", { cancelable: true });
    out.dispatched = [target.dispatchEvent(ev), target.dispatchEvent(new Event("ping"))];
    out.seen = seen;
    out.event = { prevented: ev.defaultPrevented, phase: ev.eventPhase, current: ev.currentTarget, bubbles: ev.bubbles, cancelable: ev.cancelable,
      tag: Object.prototype.toString.call(ev), trusted: ev.isTrusted, ts: typeof ev.timeStamp, phases: [Event.NONE, Event.AT_TARGET, ev.BUBBLING_PHASE] };
    const stopper = new EventTarget();
    const order = [];
    stopper.addEventListener("x", (e) => { order.push(1); e.stopImmediatePropagation(); });
    stopper.addEventListener("x", () => order.push(2));
    stopper.dispatchEvent(new Event("x"));
    out.order = order;
    const controller = new AbortController();
    const removed = [];
    stopper.addEventListener("y", () => removed.push("y"), { signal: controller.signal });
    stopper.dispatchEvent(new Event("y"));
    let onabort = 0;
    controller.signal.onabort = () => onabort++;
    controller.abort();
    stopper.dispatchEvent(new Event("y"));
    out.removed = removed;
    const ce = new CustomEvent("c", { detail: { a: 1 } });
    out.custom = [ce.detail, ce instanceof Event, ce.type, new CustomEvent("d").detail, Object.prototype.toString.call(ce)];
    class MyTarget extends EventTarget {}
    class MyEvent extends Event { constructor() { super("mine"); this.extra = 1; } }
    let got;
    const mine = new MyTarget();
    mine.addEventListener("mine", (e) => { got = [e.extra, e instanceof MyEvent, e.target === mine]; });
    mine.dispatchEvent(new MyEvent());
    out.subclass = got;
    out.signal = [controller.signal instanceof EventTarget, controller.signal.reason instanceof DOMException, controller.signal.reason.name, controller.signal.reason.code, onabort];
    let thrown;
    try { new Event(); } catch (err) { thrown = err instanceof TypeError; }
    out.eventNeedsType = thrown;
    const de = new DOMException("nope", "NotFoundError");
    out.dom = [de.name, de.message, de.code, de instanceof Error, DOMException.ABORT_ERR, new DOMException().name, new DOMException().message,
      new DOMException("m", { name: "DataCloneError" }).code, Object.prototype.toString.call(de), String(de)];
    const blob = new Blob(["h\u00e9llo ", new Uint8Array([119, 111]), new Blob(["rld"])], { type: "Text/Plain" });
    out.blob = [blob.size, blob.type, await blob.text(), await blob.slice(1, 4).text(), await blob.slice(-3).text(), blob.slice(2, 1).size,
      new Uint8Array(await blob.arrayBuffer()).length, Object.prototype.toString.call(blob), blob.slice(0, 2, "a/b").type, new Blob().size];
    const file = new File(["abc"], "a.txt", { type: "text/plain", lastModified: 42 });
    out.file = [file.name, file.size, file.type, file.lastModified, file instanceof Blob, await file.text(), Object.prototype.toString.call(file)];
    const fd = new FormData();
    fd.append("a", "1");
    fd.append("a", 2);
    fd.append("f", new Blob(["x"]), "x.bin");
    fd.append("b", blob);
    fd.set("c", "3");
    out.form = [fd.get("a"), fd.getAll("a"), fd.has("f"), fd.get("f").name, fd.get("f") instanceof File, fd.get("b").name, fd.get("b").type,
      await fd.get("b").text(), fd.get("missing"), Object.prototype.toString.call(fd)];
    fd.set("a", "only");
    fd.delete("c");
    out.formEntries = [...fd].map(([k, v]) => [k, typeof v === "string" ? v : "file:" + v.name]);
    out.formKeys = [...fd.keys()];
    const rs = new ReadableStream({ start(c) { c.enqueue("a"); c.enqueue("b"); c.close(); } });
    const chunks = [];
    for await (const c of rs) chunks.push(c);
    const upper = new TransformStream({ transform(chunk, c) { c.enqueue(chunk.toUpperCase()); } });
    const written = [];
    await new ReadableStream({ start(c) { c.enqueue("x"); c.enqueue("y"); c.close(); } })
      .pipeThrough(upper)
      .pipeTo(new WritableStream({ write(c) { written.push(c); } }, new CountQueuingStrategy({ highWaterMark: 2 })));
    const reader = new ReadableStream({ pull(c) { c.enqueue(1); c.close(); } }).getReader();
    out.streams = [chunks, written, await reader.read(), await reader.read(), reader instanceof ReadableStreamDefaultReader, rs.locked,
      typeof WritableStreamDefaultWriter, typeof ByteLengthQueuingStrategy, Object.prototype.toString.call(rs)];
    const decoded = [];
    const decoder = new TextDecoderStream();
    const writer = decoder.writable.getWriter();
    const euro = new TextEncoder().encode("\u20ac!");
    writer.write(euro.subarray(0, 1));
    writer.write(euro.subarray(1));
    writer.close();
    for await (const t of decoder.readable) decoded.push(t);
    const encoder = new TextEncoderStream();
    const encodedWriter = encoder.writable.getWriter();
    encodedWriter.write("\u00e9");
    encodedWriter.close();
    const encoded = [];
    for await (const c of encoder.readable) encoded.push(...c);
    out.codecStreams = [decoded.join(""), encoded, encoder.encoding, decoder.encoding];
    const streamed = [];
    for await (const c of new Blob(["stream me"]).stream()) streamed.push(...c);
    out.blobStream = String.fromCharCode(...streamed);
    const { port1, port2 } = new MessageChannel();
    out.message = await new Promise((resolve) => {
      port2.onmessage = (e) => { resolve([e.data, e instanceof MessageEvent, e.type]); port1.close(); };
      port1.postMessage({ hi: [1, 2] });
    });
    const request = new Request("https://example.com/a?b=1", { method: "POST", body: "payload", headers: { "x-a": "1" } });
    out.request = [request.url, request.method, request.headers.get("x-a"), request.headers.get("content-type"), await request.clone().text(),
      await request.text(), request.bodyUsed, typeof request.signal.aborted, Object.prototype.toString.call(request)];
    const response = new Response(new Blob(['{"ok":true}'], { type: "application/json" }));
    out.response = [response.headers.get("content-type"), (await response.blob()).size, new Response(null).body,
      await new Response(new ReadableStream({ start(c) { c.enqueue(new Uint8Array([104, 105])); c.close(); } })).text(),
      await new Response("body").body.getReader().read().then((r) => r.value.length)];
    return out;`;

  it("web globals Node 20 has (Event, EventTarget, DOMException, Blob, File, FormData, streams, MessageChannel, Request) behave as Node's", async () => {
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (body: string) => () => Promise<unknown>;
    const fromNode = JSON.parse(JSON.stringify(await new AsyncFunction(WEB_GLOBALS_PROBE).call(undefined))) as Record<string, unknown>;
    const e = await run(source(`this.$emit(await (async function () { ${WEB_GLOBALS_PROBE} }).call(undefined));`));
    expect(e).to.deep.equal(fromNode);
    expect((fromNode.blob as unknown[])[2]).to.equal("héllo world");
  });

  it("DOMParser, XMLSerializer and Node are there for code that names them (the AWS SDK's browser XML parser), bundled only then", async () => {
    const prepared = await prepareCode(
      runtime,
      source(
        `
      const doc = new DOMParser().parseFromString('<ListBucketResult><Name>b</Name><Contents><Key>k1</Key></Contents><Contents><Key>k2</Key></Contents></ListBucketResult>', "application/xml");
      const root = doc.documentElement;
      this.$emit({
        root: root.nodeName,
        elements: Array.from(root.childNodes).filter((n) => n.nodeType === Node.ELEMENT_NODE).map((n) => n.nodeName),
        keys: Array.from(doc.getElementsByTagName("Key")).map((n) => n.textContent),
        back: new XMLSerializer().serializeToString(doc.getElementsByTagName("Name")[0]),
        aws: parseXML('<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>'),
      });`,
        `import { parseXML } from "@aws-sdk/xml-builder@3.972.4";`,
      ),
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      root: "ListBucketResult",
      elements: ["Name", "Contents", "Contents"],
      keys: ["k1", "k2"],
      back: "<Name>b</Name>",
      aws: { Error: { Code: "NoSuchKey", Message: "gone" } },
    });
    expect(prepared.bundle).to.include("DOMParser");
    const plain = await prepareCode(runtime, source("this.$emit({ ok: true });"));
    expect(plain.bundle, "left out of components that do not name them").to.not.include("XMLSerializer");
  });

  it("with self there, a Request takes a relative URL as a web worker's does (airtable probes it at load); fetching one fails", async () => {
    const prepared = await prepareCode(
      runtime,
      source(
        `
      const probe = "signal" in new Request("");
      let fetched;
      try { await fetch(new Request("/relative")); } catch (err) { fetched = err.message; }
      let scheme;
      try { new Request("http://[bad"); } catch (err) { scheme = err.name; }
      const base = new Airtable({ apiKey: "key123", endpointUrl: "${server.url}" }).base("app1");
      let answered;
      try { await base("Table").find("rec1"); answered = "found"; } catch (err) { answered = err.statusCode ?? err.message; }
      this.$emit({ probe, fetched, scheme, answered });`,
        `import Airtable from "airtable@0.11.6";`,
      ),
    );
    const before = server.requests.length;
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      probe: true,
      fetched: "fetch failed: invalid URL: /relative",
      scheme: "TypeError",
      answered: "found",
    });
    const sent = server.requests.slice(before).map((r) => `${r.method} ${r.url} ${String(r.headers.authorization)}`);
    expect(sent).to.deep.equal(["GET /v0/app1/Table/rec1 Bearer key123"]);
  });

  it("__dirname is the module's own folder: a require of __dirname + a file is bundled (pg-format reads its reserved words so at load)", async () => {
    const e = await run(
      source(
        `this.$emit({ quoted: format("SELECT %I FROM %I WHERE id = %L", "user", "my table", "it's") });`,
        `import format from "pg-format@1.0.4";`,
      ),
    );
    // "user" is a reserved word: quoted only because reserved.js was bundled and read.
    expect(e).to.deep.equal({ quoted: `SELECT "user" FROM "my table" WHERE id = 'it''s'` });
  });

  it("npm packages resolve as in Node: their Node builds (superagent's, not its XMLHttpRequest one) and main before module (the Graph client's ES5 build)", async () => {
    const prepared = await prepareCode(
      runtime,
      source(
        `
      const agent = await request.post("${server.url}/body").send({ via: "superagent" });
      const graph = new Client.initWithMiddleware({ authProvider: { getAccessToken: async () => "t0k" }, baseUrl: "${server.url}/" });
      let me;
      try { me = await graph.api("/echo").get(); } catch (err) { me = err.message; }
      class KeepAlive extends http.Agent { constructor() { super({ keepAlive: true }); this.on("free", () => {}); } }
      const web = await import("stream/web");
      this.$emit({
        agent: agent.body,
        graph: me,
        keepAlive: new KeepAlive().keepAlive,
        web: web.ReadableStream === ReadableStream,
      });`,
        `import request from "superagent@8.1.2"; import { Client } from "@microsoft/microsoft-graph-client@3.0.7"; import http from "http";`,
      ),
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      agent: { method: "POST", type: "application/json", body: '{"via":"superagent"}' },
      graph: "plain body", // the client asks for /v1.0/echo: the server's plain answer
      keepAlive: true,
      web: true,
    });
  });

  it("an ES module package's createRequire(import.meta.url) loads what it requires, bundled (@netlify/api reads its OpenAPI spec so)", async () => {
    const host = new URL(server.url).host;
    const e = await run(
      source(
        `const api = new NetlifyAPI("t0k", { scheme: "http", host: "${host}" });
      this.$emit({ sites: await api.listSites(), methods: typeof api.createSiteDeploy });`,
        `import { NetlifyAPI } from "@netlify/api@13.4.0";`,
      ),
    );
    expect(e).to.deep.equal({ sites: [{ id: "s1", name: "docs", auth: "Bearer t0k" }], methods: "function" });
  });

  it("crypto.randomFillSync and randomFill fill as Node's (offset and size in elements), so uuid 8 and nanoid 3 work", async () => {
    const e = await run(
      source(
        `const words = new Uint32Array(4);
      crypto.randomFillSync(words, 1, 2);
      const bytes = Buffer.alloc(70000);
      crypto.randomFillSync(bytes);
      const filled = await new Promise((resolve, reject) =>
        crypto.randomFill(new Uint8Array(8), 4, (err, buf) => (err ? reject(err) : resolve(Array.from(buf.slice(0, 4))))),
      );
      let range;
      try { crypto.randomFillSync(new Uint16Array(2), 3); } catch (err) { range = err.code; }
      this.$emit({
        ends: [words[0], words[3]],
        middle: words[1] !== 0 || words[2] !== 0,
        tail: bytes.subarray(65536).some((b) => b !== 0),
        filled,
        range,
        big: crypto.randomBytes(100000).length,
        v1: /^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-/.test(uuid.v1()),
        v4: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/.test(uuid.v4()),
        nanoid: nanoid().length,
      });`,
        `import crypto from "crypto"; import * as uuid from "uuid@8.3.2"; import { nanoid } from "nanoid@3.3.7";`,
      ),
    );
    expect(e).to.deep.equal({
      ends: [0, 0],
      middle: true,
      tail: true,
      filled: [0, 0, 0, 0],
      range: "ERR_OUT_OF_RANGE",
      big: 100000,
      v1: true,
      v4: true,
      nanoid: 21,
    });
  });

  it("packages that import undici load and send through the sandbox's fetch (cheerio 1.2 and 1.0.0, the qdrant client)", async () => {
    // cheerio 1.2 brings undici 7 (which requires node:sqlite where it can), cheerio 1.0.0 undici 6
    // (which compiles its HTTP parser to WebAssembly when it loads): both load, with undici the sandbox's.
    for (const cheerio of ["cheerio@1.2.0", "cheerio@1.0.0"]) {
      const e = await run(
        source(
          `const $ = cheerio.load("<ul><li>a</li><li class='x'>b</li></ul>"); this.$emit({ text: $("li.x").text(), n: $("li").length });`,
          `import * as cheerio from "${cheerio}";`,
        ),
      );
      expect(e, cheerio).to.deep.equal({ text: "b", n: 2 });
    }
    const e = await run(
      source(
        `const answered = await undici.request(this.db.get("base") + "/echo", { method: "POST", headers: { "x-from": "undici" }, body: "hi" });
      const echoed = await answered.body.json();
      const fetched = await (await undici.fetch(this.db.get("base") + "/plain")).text();
      undici.setGlobalDispatcher(new undici.Agent({ keepAliveTimeout: 10 }));
      const client = new QdrantClient({ url: this.db.get("base"), checkCompatibility: false });
      const collections = await client.getCollections();
      this.$emit({ status: answered.statusCode, method: echoed.method, from: echoed.headers["x-from"], fetched, collections });`,
        `import * as undici from "undici@6.29.1"; import { QdrantClient } from "@qdrant/js-client-rest@1.19.0";`,
      ),
      { db: { base: server.url } },
    );
    expect(e).to.deep.equal({
      status: 201,
      method: "POST",
      from: "undici",
      fetched: "plain body",
      collections: { collections: [{ name: "docs" }] },
    });
  });

  it("structuredClone clones as Node's: Date, Map, Set, RegExp, BigInt, undefined, views of one buffer, errors, holes, cycles; DataCloneError", async () => {
    // One probe, run by the host's Node and in the sandbox: the answers must be the same.
    const probe = `
      const failure = (fn) => { try { fn(); return null; } catch (e) { return [e.name, e instanceof DOMException]; } };
      const m = new Map([[1, { a: 1 }]]); const buf = new Uint8Array([1, 2, 3]);
      class Point { constructor() { this.x = 1; } get y() { return 2; } }
      const src = { d: new Date(5), m, s: new Set(["x"]), re: /a+/gi, big: 10n, u: undefined, buf, view: new DataView(buf.buffer, 1, 2),
        err: new RangeError("bad", { cause: "c" }), nested: [1, , 3], point: new Point(), boxed: Object("s") };
      src.self = src;
      const c = structuredClone(src);
      return {
        date: c.d instanceof Date && c.d.getTime(),
        map: c.m instanceof Map && c.m.get(1).a, mapCopied: c.m.get(1) !== m.get(1),
        set: c.s instanceof Set && c.s.has("x"),
        re: c.re instanceof RegExp && c.re.source + "/" + c.re.flags,
        big: typeof c.big === "bigint" && String(c.big),
        undef: "u" in c && c.u === undefined,
        buf: c.buf instanceof Uint8Array && Array.from(c.buf), bufCopied: c.buf.buffer !== buf.buffer,
        sharedBuffer: c.view.buffer === c.buf.buffer, view: [c.view.byteOffset, c.view.byteLength],
        err: c.err instanceof RangeError && [c.err.name, c.err.message, c.err.cause],
        hole: c.nested.length === 3 && !(1 in c.nested),
        point: [Object.getPrototypeOf(c.point) === Object.prototype, c.point.x, c.point.y ?? null],
        boxed: [typeof c.boxed, String(c.boxed)],
        cyclic: c.self === c,
        fn: failure(() => structuredClone({ f() {} })),
        promise: failure(() => structuredClone(Promise.resolve())),
        symbol: failure(() => structuredClone(Symbol("s"))),
      };`;
    // Run in this realm (its Date, Map and DOMException), as the sandbox runs it in its own.
    const expected = vm.runInThisContext(`(() => { ${probe} })`)() as unknown;
    expect(expected).to.deep.include({ cyclic: true, date: 5, fn: ["DataCloneError", true] });
    const e = await run(source(`this.$emit((() => { ${probe} })());`));
    expect(e).to.deep.equal(expected);
  });

  it("classes and functions keep their names though bundling renamed them (Buffer, not Buffer7), in the prelude and the component's bundle", async () => {
    const e = await run(
      source(
        `const classes = { Buffer, EventEmitter, Readable, Writable, URL, URLSearchParams, TextEncoder, TextDecoder, Blob, FormData, Headers, Request, Response, ReadableStream, AbortController, AbortSignal, Event, EventTarget, DOMException, File };
      const renamed = Object.entries(classes).filter(([name, value]) => value.name !== name).map(([name, value]) => name + " is " + value.name);
      class Local {}
      this.$emit({ renamed, instance: Buffer.from("x").constructor.name, emitter: new EventEmitter().constructor.name, local: Local.name });`,
        `import { EventEmitter } from "events"; import { Readable, Writable } from "stream";`,
      ),
    );
    expect(e).to.deep.equal({ renamed: [], instance: "Buffer", emitter: "EventEmitter", local: "Local" });
  });

  it("form-data names and types a part from an axios response stream as form-data does (its request's path, its Content-Type)", async () => {
    const e = await run(
      source(
        `const response = await axios.get("${server.url}/files/report.txt?v=2", { responseType: "stream" });
      const form = new FormData();
      form.append("file", response.data);
      form.append("named", Buffer.from("x"), { filename: "x.json" });
      const sent = await axios.post("${server.url}/body", form, { headers: form.getHeaders() });
      this.$emit({ parts: sent.data.body.split("\\r\\n").filter((line) => line.startsWith("Content-")), statusCode: response.data.statusCode });`,
        `import axios from "axios"; import FormData from "form-data";`,
      ),
    );
    expect(e).to.deep.equal({
      parts: [
        'Content-Disposition: form-data; name="file"; filename="report.txt?v=2"',
        "Content-Type: text/plain",
        'Content-Disposition: form-data; name="named"; filename="x.json"',
        "Content-Type: application/json",
      ],
      statusCode: 200,
    });
  });

  it("requests the run did not await are let finish, with what follows them, before the invocation ends (asana's run does not await its emit)", async () => {
    const prepared = await prepareCode(
      runtime,
      source(`
      const later = async () => {
        const first = await (await fetch("${server.url}/body", { method: "POST", body: "one" })).json();
        const second = await (await fetch("${server.url}/body", { method: "PUT", body: "two" })).json();
        this.$emit({ late: [first.method, second.method] });
      };
      later();
      this.$emit({ returned: true });`),
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits.map((e) => e.event)).to.deep.equal([{ returned: true }, { late: ["POST", "PUT"] }]);
  });

  it("self is the global object (form-data's browser build reads self.FormData); window and document stay undefined", async () => {
    const e = await run(
      source(`this.$emit({ self: self === globalThis, form: self.FormData === FormData, window: typeof window, document: typeof document,
        navigator: typeof navigator, descriptor: Object.getOwnPropertyDescriptor(globalThis, "ReadableStream").get === undefined || "lazy" });`),
    );
    expect(e).to.deep.equal({
      self: true,
      form: true,
      window: "undefined",
      document: "undefined",
      navigator: "undefined",
      descriptor: "lazy",
    });
  });

  it("fetch and axios send a FormData body as multipart/form-data, and a Blob (or, with fetch, a ReadableStream) body as its bytes", async () => {
    const e = await run(
      source(
        `
      const form = new FormData();
      form.append("field", "value");
      form.append("upload", new Blob(["file body"], { type: "text/plain" }), "note.txt");
      const multipart = await (await fetch(event.url, { method: "POST", body: form })).json();
      const blob = await (await fetch(event.url, { method: "PUT", body: new Blob(["blob body"], { type: "application/x-thing" }) })).json();
      const stream = await (await fetch(new Request(event.url, { method: "POST", body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("streamed")); c.close(); } }), duplex: "half" }))).json();
      const viaAxios = (await axios.post(event.url, form, { headers: { "content-type": "multipart/form-data" } })).data;
      const blobViaAxios = (await axios.put(event.url, new Blob(["axios blob"], { type: "text/csv" }))).data;
      this.$emit({ multipart, blob, stream, viaAxios, blobViaAxios });`,
        `import axios from "axios";`,
      ),
      { event: { url: `${server.url}/body` } },
    );
    expect(e.multipart.type).to.match(/^multipart\/form-data; boundary=/);
    const boundary = (e.multipart.type as string).split("boundary=")[1];
    expect(e.multipart.body).to.equal(
      `--${boundary}\r\nContent-Disposition: form-data; name="field"\r\n\r\nvalue\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="upload"; filename="note.txt"\r\nContent-Type: text/plain\r\n\r\nfile body\r\n` +
        `--${boundary}--\r\n`,
    );
    expect(e.blob).to.deep.equal({ method: "PUT", type: "application/x-thing", body: "blob body" });
    expect(e.stream).to.deep.equal({ method: "POST", type: null, body: "streamed" });
    const axiosBoundary = (e.viaAxios.type as string).split("boundary=")[1];
    expect(e.viaAxios.body).to.equal((e.multipart.body as string).replaceAll(boundary, axiosBoundary));
    expect(e.blobViaAxios).to.deep.equal({ method: "PUT", type: "text/csv", body: "axios blob" });
  });

  it("modules the sandbox cannot offer still fail the save, naming the module", async () => {
    for (const name of ["child_process", "net", "worker_threads"]) {
      const error = await prepareCode(runtime, source(`require("${name}");`)).catch((e: unknown) => e);
      expect(error, name).to.be.instanceOf(ComponentValidationError);
      expect((error as ComponentValidationError).problems[0].message).to.match(
        new RegExp(`"${name}", which is not available in the sandbox`),
      );
    }
    // A package that loads WebAssembly (firebase-admin's farmhash) is refused in those words, not in the bundler's.
    const wasm = await prepareCode(runtime, source(`fingerprint64("a");`, `import { fingerprint64 } from "farmhash-modern@1.1.0";`)).catch(
      (e: unknown) => e,
    );
    expect(wasm).to.be.instanceOf(ComponentValidationError);
    expect((wasm as ComponentValidationError).problems[0].message).to.include(
      'npm package "farmhash-modern" loads WebAssembly (farmhash_modern_bg.wasm), which the sandbox does not run',
    );
  });

  it("an npm package importing a module the sandbox cannot offer saves; the module throws, naming the call, only when used", async () => {
    // https-proxy-agent imports net and tls when it loads and uses them only to connect.
    const prepared = await prepareCode(
      runtime,
      `import { HttpsProxyAgent } from "https-proxy-agent@7.0.6";
       export default { name: "proxy", version: "1", async run() {
         const agent = new HttpsProxyAgent("http://proxy.example:3128");
         let connect;
         try { await agent.connect({}, { host: "example.com", port: 443, secureEndpoint: true }); } catch (e) { connect = { message: e.message, code: e.code }; }
         this.$emit({ proxy: agent.proxy.host, connect });
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      proxy: "proxy.example:3128",
      connect: {
        message:
          "net.connect is not available in the sandbox: the sandbox has no sockets (make HTTP requests with fetch, axios, http or https)",
        code: "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM",
      },
    });
  });

  it("heavy polyfills are bundled only into components that import them", async () => {
    const plain = await prepareCode(runtime, source(`this.$emit({ ok: true });`));
    const withStream = await prepareCode(runtime, source(`this.$emit({ ok: typeof Readable });`, `import { Readable } from "stream";`));
    expect(plain.bundle.length).to.be.below(5_000);
    expect(withStream.bundle.length).to.be.above(50_000);
  });
});
