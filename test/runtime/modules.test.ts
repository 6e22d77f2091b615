// Modules inside the sandbox: the Node built-in subset (checked against Node's own answers),
// the @pipedream/platform equivalent, axios and fetch over the host HTTP bridge and its guard.
import { expect } from "chai";
import crypto from "node:crypto";
import querystring from "node:querystring";
import util from "node:util";
import type { Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, prepareFixture, startRuntime, startServer, type TestServer } from "./support.js";

describe("runtime: modules in the sandbox", function () {
  this.timeout(30_000);
  let runtime: Runtime;
  let guarded: Runtime;
  let server: TestServer;
  before(async () => {
    runtime = await startRuntime({ allowPrivateNetworks: true });
    guarded = await startRuntime({ workers: 1, allowPrivateNetworks: false });
    server = await startServer((req, res, body) => {
      if (req.url?.startsWith("/items")) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            items: [
              { id: 1, title: "one" },
              { id: 2, title: "two" },
            ],
            query: req.url,
          }),
        );
      } else if (req.url === "/echo") {
        res
          .writeHead(201, { "content-type": "application/json" })
          .end(JSON.stringify({ method: req.method, body: JSON.parse(body || "null"), type: req.headers["content-type"] }));
      } else if (req.url === "/missing") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "nope" }));
      } else if (req.url === "/raw") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ received: body.length }));
      } else if (req.url === "/files/report.csv") {
        res
          .writeHead(200, { "content-type": "text/csv", "last-modified": "Tue, 03 Nov 2026 10:00:00 GMT", etag: '"v1"' })
          .end("a,b\n1,2\n");
      } else if (req.url === "/big") {
        res.writeHead(200).end("x".repeat(64 * 1024));
      } else if (req.url === "/slow") {
        setTimeout(() => res.writeHead(200).end("late"), 3000);
      } else res.writeHead(200, { "content-type": "text/plain" }).end("plain text");
    });
  });
  after(async () => {
    await server.close();
    await runtime.close();
    await guarded.close();
  });

  it("provides crypto, Buffer, url, querystring, util, events, timers with Node's results", async () => {
    const prepared = await prepareFixture(runtime, "valid/builtins.source.mjs");
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const e = outcome.emits[0].event as Record<string, unknown>;
    const u = new URL("https://user:pw@example.com:8443/a/b?x=1&y=two#frag");
    u.searchParams.append("z", "3 4");
    expect(e).to.deep.include({
      sha256: crypto.createHash("sha256").update("abc").digest("hex"),
      md5: crypto.createHash("md5").update("abc").digest("base64"),
      hmac: crypto.createHmac("sha256", "key").update("The quick brown fox jumps over the lazy dog").digest("hex"),
      base64: Buffer.from("héllo").toString("base64"),
      hexBack: "hello",
      webUrl: "https://example.org/rel?q=1",
      params: new URLSearchParams({ a: "1", b: "x y" }).toString(),
      qs: querystring.stringify({ a: [1, 2], b: "c d" }),
      formatted: util.format("%s has %d items: %j", "list", 3, { a: 1 }),
      heard: 42,
      text: "ünïcode",
      atob: "plain",
    });
    expect(e["parsed"]).to.deep.equal({ a: ["1", "2"], b: "c d" });
    expect(e["url"]).to.deep.equal({ host: u.host, port: u.port, pathname: u.pathname, search: u.search, hash: u.hash, href: u.href });
    expect(e["uuid"]).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("serves @pipedream/platform axios: data by default, the full response on request", async () => {
    const prepared = await prepareFixture(runtime, "valid/platform-axios.source.mjs");
    const outcome = await runtime.invoke(invocation(prepared, { props: { baseUrl: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits).to.deep.equal([
      { event: { id: 1, title: "one" }, meta: { id: 1, summary: "one" } },
      { event: { id: 2, title: "two" }, meta: { id: 2, summary: "two" } },
      {
        event: { status: 201, echoed: { method: "POST", body: { hello: "world" }, type: "application/json" }, interval: 900 },
        meta: { name: "meta" },
      },
    ]);
    expect(server.requests.some((r) => r.url === "/items?page=1")).to.equal(true);
    const bad = await runtime.invoke(invocation(prepared, { props: { baseUrl: "ftp://x" } }));
    expect(bad.error).to.include({ name: "ConfigurationError", message: "baseUrl must be an http(s) URL" });
  });

  it("getFileStream of a /tmp file is a read stream of it: form-data names and types the upload from its path; data: URLs", async () => {
    // An action that uploads what an earlier workflow step left in /tmp, as published upload actions
    // do, without importing fs itself; and one that does, which gets fs.ReadStream itself.
    const upload = await prepareCode(
      runtime,
      `import FormData from "form-data";
       import axios from "axios";
       import { getFileStream, getFileStreamAndMetadata } from "@pipedream/platform";
       export default { name: "upload", version: "1", type: "action", props: { base: "string" }, async run() {
         const stream = await getFileStream("/tmp/photo.png");
         const form = new FormData();
         form.append("file", stream);
         await axios.post(this.base + "/upload-photo", form, { headers: form.getHeaders() });
         const text = async (s) => { let out = ""; for await (const chunk of s) out += chunk.toString(); return out; };
         const data = await getFileStreamAndMetadata("data:text/csv;name=rows.csv;base64," + Buffer.from("a,b\\n1,2\\n").toString("base64"));
         const plain = await getFileStreamAndMetadata("data:,Hello%2C%20World");
         let bad; try { await getFileStream("data:text/plain;base64"); } catch (e) { bad = e.message; }
         return {
           path: stream.path,
           data: { text: await text(data.stream), ...data.metadata },
           plain: { text: await text(plain.stream), ...plain.metadata },
           bad,
         };
       } };`,
    );
    const png = Buffer.from("PNG-bytes");
    const tmp = [{ path: "/tmp/photo.png", kind: "file" as const, data: png, mtimeMs: Date.now(), birthtimeMs: Date.now() }];
    const uploaded = await runtime.invoke(invocation(upload, { method: "run", props: { base: server.url }, tmp }));
    expect(uploaded.ok, JSON.stringify(uploaded.error)).to.equal(true);
    expect(uploaded.returnValue).to.deep.equal({
      path: "/tmp/photo.png",
      data: { text: "a,b\n1,2\n", size: 8, contentType: "text/csv", name: "rows.csv" },
      plain: { text: "Hello, World", size: 12, contentType: "text/plain", name: "file.txt" },
      bad: "Failed to read the data URL: it has no comma before its data",
    });
    const sent = server.requests.find((r) => r.url === "/upload-photo");
    // As form-data names and types a part from an fs.ReadStream: its path's base name and extension.
    expect(sent?.body).to.include(
      'Content-Disposition: form-data; name="file"; filename="photo.png"\r\nContent-Type: image/png\r\n\r\nPNG-bytes',
    );
    const withFs = await prepareCode(
      runtime,
      `import fs from "fs";
       import { getFileStream } from "@pipedream/platform";
       export default { name: "with fs", version: "1", type: "action", props: {}, async run() {
         fs.writeFileSync("/tmp/a.txt", "from fs");
         const stream = await getFileStream("/tmp/a.txt");
         let text = ""; for await (const chunk of stream) text += chunk;
         return { readStream: stream instanceof fs.ReadStream, path: stream.path, text };
       } };`,
    );
    const read = await runtime.invoke(invocation(withFs, { method: "run" }));
    expect(read.ok, JSON.stringify(read.error)).to.equal(true);
    expect(read.returnValue).to.deep.equal({ readStream: true, path: "/tmp/a.txt", text: "from fs" });
  });

  it("serves every name @pipedream/platform exports: SQL app bases, file streams, OAuth 1.0a signing input, $end", async () => {
    // An app file in the registry's style: its methods spread the platform's SQL bases when it
    // loads, so a missing export failed every source of the app.
    const prepared = await prepareCode(
      runtime,
      `import fs from "fs";
       import { sqlProxy, sqlProp, getFileStream, getFileStreamAndMetadata, transformConfigForOauth, cloneSafe, $end, END_NEEDLE,
         HTTP_METHODS, PD_OFFICIAL_GMAIL_OAUTH_CLIENT_ID, ConfigurationError, axios } from "@pipedream/platform";
       const app = { methods: { ...sqlProxy.methods, ...sqlProp.methods, executeQuery({ query }) { return [{ query }]; } } };
       const text = async (stream) => { let out = ""; for await (const chunk of stream) out += chunk.toString(); return out; };
       const failure = async (fn) => { try { await fn(); return null; } catch (e) { return { name: e.name, message: e.message, configuration: e instanceof ConfigurationError }; } };
       export default { name: "platform", version: "1", props: { base: "string" }, methods: app.methods, async run() {
         fs.writeFileSync("/tmp/notes/today.txt".replace("/notes", ""), "hello file");
         const local = await getFileStreamAndMetadata("today.txt");
         const remote = await getFileStreamAndMetadata(this.base + "/files/report.csv");
         const cyclic = { a: [1, { b: 2 }] }; cyclic.self = cyclic;
         const config = { method: "post", baseURL: "https://api.example.com", url: "/1.1/statuses/update.json?x=1#frag",
           params: { status: "Hi (there)!*'", n: 2 }, headers: { "Content-Type": "application/x-www-form-urlencoded" }, data: "a=1&b=two+words" };
         const signed = transformConfigForOauth(config);
         let ended; try { $end("stop here"); } catch (e) { ended = { message: e.message, needle: e[END_NEEDLE].message }; }
         const api = axios.create({ baseURL: this.base });
         this.$emit({
           rows: this.executeQuery({ query: "select 1" }),
           missing: await failure(() => this.getClientConfiguration()),
           schema: await failure(() => this.getSchema()),
           local: { text: await text(local.stream), ...local.metadata, lastModified: typeof local.metadata.lastModified.getTime() },
           remote: { text: await text(await getFileStream(this.base + "/files/report.csv")), ...remote.metadata, lastModified: remote.metadata.lastModified.toISOString() },
           notFound: await failure(() => getFileStream("/tmp/nothing.txt")),
           outside: await failure(() => getFileStream("/etc/passwd")),
           notHttp: await failure(() => getFileStream("ftp://example.com/x")),
           gone: await failure(() => getFileStream(this.base + "/missing")),
           signed, serializer: typeof config.paramsSerializer,
           clone: cloneSafe(cyclic),
           ended, methods: HTTP_METHODS.length, gmail: "client-123".includes(PD_OFFICIAL_GMAIL_OAUTH_CLIENT_ID),
           created: await api.get("/items"),
           apiError: await failure(() => axios(this, { url: this.base + "/missing" })),
           body: await failure(() => axios(this, { url: this.base + "/items", body: {} })),
         });
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const e = outcome.emits[0].event as Record<string, unknown>;
    expect(e.rows).to.deep.equal([{ query: "select 1" }]);
    expect(e.missing).to.deep.equal({ name: "ConfigurationError", message: "getClientConfiguration not implemented", configuration: true });
    expect(e.schema).to.deep.equal({ name: "ConfigurationError", message: "getSchema not implemented", configuration: true });
    expect(e.local).to.deep.equal({ text: "hello file", size: 10, name: "today.txt", contentType: "text/plain", lastModified: "number" });
    expect(e.remote).to.deep.equal({
      text: "a,b\n1,2\n",
      size: 8,
      contentType: "text/csv",
      lastModified: "2026-11-03T10:00:00.000Z",
      name: "report.csv",
      etag: '"v1"',
    });
    expect(e.notFound).to.deep.include({ message: "File not found: /tmp/nothing.txt" });
    expect(e.outside).to.deep.include({ message: "File not found: /etc/passwd" });
    expect(e.notHttp).to.deep.include({ message: "Failed to fetch ftp://example.com/x: only http, https and data URLs can be fetched" });
    expect(e.gone).to.deep.include({ message: `Failed to fetch ${server.url}/missing: 404 Not Found` });
    // What OAuth 1.0a signs: the URL's parameters RFC 3986-escaped after its own query, the
    // fragment dropped, and a form body's parameters.
    expect(e.signed).to.deep.equal({
      method: "post",
      url: "https://api.example.com/1.1/statuses/update.json?x=1&status=Hi%20%28there%29%21%2A%27&n=2",
      data: { a: "1", b: "two words" },
    });
    expect(e.serializer).to.equal("function");
    expect(e.clone).to.deep.equal({ a: [1, { b: 2 }], self: "[Circular]" });
    expect(e.ended).to.deep.equal({ message: "stop here", needle: "stop here" });
    expect(e.methods).to.equal(9);
    expect(e.gmail).to.equal(false);
    expect(e.created).to.deep.include({ query: "/items" });
    expect(e.apiError).to.deep.include({ name: "AxiosError - Request failed with status code 404", message: '{"error":"nope"}' });
    expect(e.body).to.deep.include({ name: "ConfigurationError", message: "unexpected body, use only data instead" });
    // The guarded runtime fetches files through the same outbound guard: loopback is refused.
    const refused = await guarded.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(refused.ok).to.equal(false);
    expect(refused.error).to.include({ name: "AxiosError" });
    expect(refused.error?.message).to.match(/^refusing to connect to 127\.0\.0\.1 .*loopback address/);
  });

  it("serves the npm form-data package's Node API: Buffers and streams with filenames, getHeaders, sent by axios, fetch and node-fetch", async () => {
    const prepared = await prepareCode(
      runtime,
      `import FormData from "form-data";
       import fs from "fs";
       import fetchNode from "node-fetch";
       import { axios } from "@pipedream/platform";
       const build = async (base) => {
         const form = new FormData();
         form.append("note", "héllo");
         form.append("count", 42);
         form.append("blob", Buffer.from("abc"), { filename: "a.bin" });
         form.append("table", Buffer.from("x,y\\n1,2\\n"), { filename: "rows.txt", contentType: "text/csv" });
         form.append("upload", fs.createReadStream("/tmp/data.json"));
         const remote = await axios(this, { url: base + "/files/report.csv", responseType: "stream" });
         form.append("remote", remote, "report.csv");
         return form;
       };
       export default { name: "forms", version: "1", props: { base: "string" }, async run() {
         fs.writeFileSync("/tmp/data.json", JSON.stringify({ ok: true }));
         const viaAxios = await build(this.base);
         const headers = viaAxios.getHeaders({ "X-Trace": "t1" });
         await axios(this, { method: "POST", url: this.base + "/raw", data: viaAxios, headers });
         await fetch(this.base + "/raw", { method: "POST", body: await build(this.base) });
         await fetchNode(this.base + "/raw", { method: "POST", body: await build(this.base) });
         const small = new FormData();
         small.append("a", "1");
         small.append("b", Buffer.from("two"), { filename: "b.txt" });
         let submit; try { small.submit("http://example.com"); } catch (e) { submit = e.message; }
         let arrays; const bad = new FormData(); bad.on("error", (e) => (arrays = e.message)); bad.append("list", [1, 2]);
         this.$emit({ headers, boundary: viaAxios.getBoundary(), small: small.getBuffer().toString(), known: small.hasKnownLength(),
           lengthSync: small.getLengthSync(), length: small.getBuffer().length, streamKnown: viaAxios.hasKnownLength(), submit, arrays,
           tag: String(small) });
       } };`,
    );
    const before = server.requests.length;
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const e = outcome.emits[0].event as Record<string, any>;
    expect(e.boundary).to.match(/^-{26}[0-9a-f]{24}$/);
    expect(e.headers).to.deep.equal({ "x-trace": "t1", "content-type": `multipart/form-data; boundary=${e.boundary}` });
    const sent = server.requests.slice(before).filter((r) => r.url === "/raw");
    expect(sent).to.have.length(3);
    expect(sent[0].headers["content-type"]).to.equal(`multipart/form-data; boundary=${e.boundary}`);
    expect(sent[0].headers["x-trace"]).to.equal("t1");
    // Each body read by an independent parser (Node's own multipart reader, undici's).
    for (const request of sent) {
      const form = await new Response(request.body, { headers: { "content-type": String(request.headers["content-type"]) } }).formData();
      const file = async (name: string) => {
        const value = form.get(name) as File;
        return { name: value.name, type: value.type, text: await value.text() };
      };
      expect(form.get("note")).to.equal("héllo");
      expect(form.get("count")).to.equal("42");
      expect(await file("blob")).to.deep.equal({ name: "a.bin", type: "application/octet-stream", text: "abc" });
      expect(await file("table")).to.deep.equal({ name: "rows.txt", type: "text/csv", text: "x,y\n1,2\n" });
      expect(await file("upload")).to.deep.equal({ name: "data.json", type: "application/json", text: '{"ok":true}' });
      expect(await file("remote")).to.deep.equal({ name: "report.csv", type: "text/csv", text: "a,b\n1,2\n" });
    }
    const b = e.boundary.replace(/[0-9a-f]{24}$/, "");
    expect(e.small.replace(/-{26}[0-9a-f]{24}/g, `${b}B`)).to.equal(
      `--${b}B\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n` +
        `--${b}B\r\nContent-Disposition: form-data; name="b"; filename="b.txt"\r\nContent-Type: text/plain\r\n\r\ntwo\r\n` +
        `--${b}B--\r\n`,
    );
    expect(e).to.deep.include({ known: true, streamKnown: false, tag: "[object FormData]", arrays: "Arrays are not supported." });
    expect(e.lengthSync).to.equal(e.length);
    expect(e.submit).to.match(/submit\(\) is not available in the sandbox/);
  });

  it("serves axios, fetch and node-fetch through the host bridge, with axios error semantics", async () => {
    const prepared = await prepareCode(
      runtime,
      `import axios from "axios";
       import nodeFetch from "node-fetch@2";
       export default { name: "clients", version: "1", props: { base: "string" }, async run() {
         const client = axios.create({ baseURL: this.base, headers: { "x-client": "hw" } });
         const got = await client.get("/items", { params: { q: "a b" } });
         let notFound;
         try { await axios.get(this.base + "/missing"); } catch (e) { notFound = { isAxiosError: axios.isAxiosError(e), status: e.response.status, data: e.response.data, message: e.message }; }
         const res = await fetch(this.base + "/echo", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ f: 1 }) });
         const text = await (await nodeFetch(this.base + "/other")).text();
         this.$emit({ items: got.data.items.length, query: got.data.query, notFound, fetched: { status: res.status, ok: res.ok, json: await res.json() }, text });
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      items: 2,
      query: "/items?q=a+b",
      notFound: { isAxiosError: true, status: 404, data: { error: "nope" }, message: "Request failed with status code 404" },
      fetched: { status: 201, ok: true, json: { method: "POST", body: { f: 1 }, type: "application/json" } },
      text: "plain text",
    });
    expect(server.requests.find((r) => r.url.startsWith("/items?q="))?.headers["x-client"]).to.equal("hw");
  });

  it("gives axios instances the per-method default headers SDKs set (defaults.headers.common, .post[…]), each instance its own", async () => {
    // Twilio's RequestClient sets \`defaults.headers.post["Content-Type"]\` on its own axios instance at construction.
    const prepared = await prepareCode(
      runtime,
      `import axios from "axios";
       export default { name: "defaults", version: "1", props: { base: "string" }, async run() {
         const sdk = axios.create({ baseURL: this.base });
         sdk.defaults.headers.post["Content-Type"] = "application/x-www-form-urlencoded";
         sdk.defaults.headers.common["X-Sdk"] = "1";
         const child = sdk.create();
         child.defaults.headers.common["X-Child"] = "1";
         await sdk.post("/defaults/sdk-post", "a=1");
         await sdk.get("/defaults/sdk-get");
         await child.post("/defaults/child-post", "b=2");
         await axios.post(this.base + "/defaults/plain-post", { c: 3 });
         this.$emit({ groups: Object.keys(axios.create().defaults.headers).sort() });
       } };`,
    );
    const before = server.requests.length;
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const seen = server.requests
      .slice(before)
      .map((r) => ({ url: r.url, type: r.headers["content-type"], sdk: r.headers["x-sdk"], child: r.headers["x-child"] }));
    expect(seen).to.deep.equal([
      { url: "/defaults/sdk-post", type: "application/x-www-form-urlencoded", sdk: "1", child: undefined },
      { url: "/defaults/sdk-get", type: undefined, sdk: "1", child: undefined },
      { url: "/defaults/child-post", type: "application/x-www-form-urlencoded", sdk: "1", child: "1" },
      { url: "/defaults/plain-post", type: "application/json", sdk: undefined, child: undefined },
    ]);
    expect(outcome.emits[0].event).to.deep.equal({ groups: ["common", "delete", "get", "head", "options", "patch", "post", "put"] });
  });

  it("exports what axios 1.x exports (AxiosHeaders, CanceledError, CancelToken, HttpStatusCode, …); interceptors get config.headers as AxiosHeaders", async () => {
    // apify-client builds AxiosHeaders; interceptors of SDKs call config.headers.set().
    const prepared = await prepareCode(
      runtime,
      `import axios, { AxiosHeaders, CanceledError, CancelToken, HttpStatusCode, mergeConfig, toFormData, formToJSON, VERSION } from "axios";
       export default { name: "exports", version: "1", props: { base: "string" }, async run() {
         const headers = new AxiosHeaders({ "Content-Type": "text/plain", "x-a": 1 });
         headers.set("X-B", "two").set({ "x-a": "3" });
         const client = axios.create({ baseURL: this.base, headers: { common: { "X-Common": "c" } } });
         let seen;
         client.interceptors.request.use((config) => {
           seen = { isHeaders: config.headers instanceof AxiosHeaders, common: config.headers.get("x-common") };
           config.headers.set("X-From-Interceptor", "yes");
           config.headers.setAuthorization("Bearer t");
           return config;
         });
         await client.get("/exports", { headers: new AxiosHeaders({ "X-Request": "r" }) });
         const { token, cancel } = CancelToken.source();
         cancel("stop");
         let cancelled;
         try { token.throwIfRequested(); } catch (err) { cancelled = { isCancel: axios.isCancel(err), name: err.name, message: err.message, code: err.code }; }
         const form = toFormData({ a: { b: 1 }, list: [1, 2] });
         this.$emit({
           headers: headers.toJSON(), contentType: headers.getContentType(), has: headers.has("x-b"), text: headers.toString(),
           seen, cancelled, plainCancel: axios.isCancel(new Error("x")), canceledError: new CanceledError() instanceof axios.AxiosError,
           status: [HttpStatusCode.NotFound, HttpStatusCode[429]], merged: mergeConfig({ a: 1 }, { b: 2 }).b,
           form: [...form.keys()], json: formToJSON(form), version: typeof VERSION,
         });
       } };`,
    );
    const before = server.requests.length;
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      headers: { "Content-Type": "text/plain", "x-a": "3", "X-B": "two" },
      contentType: "text/plain",
      has: true,
      text: "Content-Type: text/plain\nx-a: 3\nX-B: two",
      seen: { isHeaders: true, common: "c" },
      cancelled: { isCancel: true, name: "CanceledError", message: "stop", code: "ERR_CANCELED" },
      plainCancel: false,
      canceledError: true,
      status: [404, "TooManyRequests"],
      merged: 2,
      form: ["a[b]", "list[]", "list[]"],
      json: { a: { b: "1" }, list: ["1", "2"] },
      version: "string",
    });
    const sent = server.requests.slice(before).find((r) => r.url === "/exports")!;
    expect(sent.headers).to.include({ "x-common": "c", "x-request": "r", "x-from-interceptor": "yes", authorization: "Bearer t" });
  });

  it("sends axios bodies and query strings in axios 1.x's wire format: URL-encoded forms, bracketed params, JSON otherwise", async () => {
    // The expected strings are what real axios 1.21 (Node adapter) put on the wire for the same calls. Query
    // values avoid ' < > : the host bridge's URL parser percent-encodes those, where Node's axios sends them raw.
    const prepared = await prepareCode(
      runtime,
      `import axios from "axios";
       import { axios as pdAxios } from "@pipedream/platform";
       export default { name: "wire", version: "1", props: { base: "string" }, async run() {
         const form = { headers: { "Content-Type": "application/x-www-form-urlencoded; charset=utf-8" } };
         await pdAxios(this, { method: "POST", url: this.base + "/wire/token", headers: { "content-type": "application/x-www-form-urlencoded" },
           data: { grant_type: "client_credentials", scope: "a b", client_id: "id:1" } });
         await axios.post(this.base + "/wire/nested", { user: { name: "Ann", tags: ["x", "y"], deep: { z: [{ k: 1 }] } }, ids: [1, null, 2],
           rows: [{ a: 1 }, { a: 2 }], when: new Date(0), ok: true, skip: null, gone: undefined, "meta{}": { j: 1 }, blob: Buffer.from("hi"),
           txt: "!'()~*-._" }, form);
         await axios.post(this.base + "/wire/options", { a: [1, 2], b: { c: [3] } }, { ...form, formSerializer: { indexes: true, dots: true } });
         await axios.post(this.base + "/wire/search-params", new URLSearchParams({ a: "1", b: "x y" }));
         await axios.post(this.base + "/wire/json", { a: { b: [1, 2] } });
         await axios.get(this.base + "/wire/query", { params: { q: "a b", b: { c: 1, d: { e: [1, 2] } }, a: [1, 2], d: new Date(0), n: null,
           u: undefined, s: "[x]:$,!()~", t: true } });
         await axios.get(this.base + "/wire/no-indexes?x=1#frag", { params: { a: [1, 2] }, paramsSerializer: { indexes: null } });
         await axios.get(this.base + "/wire/encoder", { params: { a: [1, 2], "k{}": { j: "v w" } },
           paramsSerializer: { indexes: true, encode: (v, d) => "(" + d(v) + ")" } });
         await axios.get(this.base + "/wire/search-query", { params: new URLSearchParams({ a: "1 2" }) });
       } };`,
    );
    const before = server.requests.length;
    const outcome = await runtime.invoke(invocation(prepared, { props: { base: server.url } }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const seen = server.requests.slice(before).map((r) => ({ url: r.url, type: r.headers["content-type"], body: r.body }));
    expect(seen).to.deep.equal([
      {
        url: "/wire/token",
        type: "application/x-www-form-urlencoded",
        body: "grant_type=client_credentials&scope=a+b&client_id=id%3A1",
      },
      {
        url: "/wire/nested",
        type: "application/x-www-form-urlencoded; charset=utf-8",
        body:
          "user%5Bname%5D=Ann&user%5Btags%5D%5B0%5D=x&user%5Btags%5D%5B1%5D=y&user%5Bdeep%5D%5Bz%5D%5B0%5D%5Bk%5D=1" +
          "&ids%5B%5D=1&ids%5B%5D=2&rows%5B0%5D%5Ba%5D=1&rows%5B1%5D%5Ba%5D=2&when=1970-01-01T00%3A00%3A00.000Z&ok=true" +
          "&meta%7B%7D=%7B%22j%22%3A1%7D&blob=aGk%3D&txt=%21%27%28%29%7E*-._",
      },
      { url: "/wire/options", type: "application/x-www-form-urlencoded; charset=utf-8", body: "a.0=1&a.1=2&b.c.0=3" },
      { url: "/wire/search-params", type: "application/x-www-form-urlencoded;charset=utf-8", body: "a=1&b=x+y" },
      { url: "/wire/json", type: "application/json", body: '{"a":{"b":[1,2]}}' },
      {
        url:
          "/wire/query?q=a+b&b%5Bc%5D=1&b%5Bd%5D%5Be%5D%5B0%5D=1&b%5Bd%5D%5Be%5D%5B1%5D=2&a%5B%5D=1&a%5B%5D=2" +
          "&d=1970-01-01T00:00:00.000Z&s=%5Bx%5D:$,!()~&t=true",
        type: undefined,
        body: "",
      },
      { url: "/wire/no-indexes?x=1&a=1&a=2", type: undefined, body: "" },
      { url: "/wire/encoder?(a%5B0%5D)=(1)&(a%5B1%5D)=(2)&(k%7B%7D)=(%7B%22j%22%3A%22v+w%22%7D)", type: undefined, body: "" },
      { url: "/wire/search-query?a=1+2", type: undefined, body: "" },
    ]);
  });

  it("refuses private addresses from component code unless the operator allows them", async () => {
    const prepared = await prepareCode(
      guarded,
      `import axios from "axios";
       export default { name: "ssrf", version: "1", props: { targets: "string[]" }, async run() {
         const out = [];
         for (const t of this.targets) { try { await axios.get(t); out.push("reached " + t); } catch (e) { out.push(e.code + ": " + e.message); } }
         this.$emit(out);
       } };`,
    );
    const before = server.requests.length;
    const outcome = await guarded.invoke(
      invocation(prepared, {
        props: { targets: [server.url + "/items", "http://169.254.169.254/latest/meta-data/", "http://[::1]:9/", "http://10.0.0.1/"] },
      }),
    );
    const lines = outcome.emits[0].event as string[];
    expect(lines).to.have.length(4);
    for (const line of lines) expect(line).to.match(/^ERR_NETWORK: refusing to connect to /);
    expect(lines[1]).to.match(/169\.254\.169\.254/);
    expect(server.requests.length).to.equal(before);
  });

  it("applies response size limits and timeouts to component HTTP", async () => {
    const limited = await startRuntime({
      workers: 1,
      allowPrivateNetworks: true,
      limits: { httpMaxResponseBytes: 1024, httpTimeoutMs: 500 },
    });
    try {
      const prepared = await prepareCode(
        limited,
        `import axios from "axios";
         export default { name: "limits", version: "1", props: { base: "string" }, async run() {
           const out = {};
           for (const p of ["/big", "/slow"]) { try { await axios.get(this.base + p); out[p] = "ok"; } catch (e) { out[p] = e.code + ": " + e.message; } }
           this.$emit(out);
         } };`,
      );
      const outcome = await limited.invoke(invocation(prepared, { props: { base: server.url } }));
      expect(outcome.emits[0].event).to.deep.equal({
        "/big": "ERR_NETWORK: response from 127.0.0.1:" + new URL(server.url).port + " is larger than 1024 bytes",
        "/slow": "ECONNABORTED: request to 127.0.0.1:" + new URL(server.url).port + " timed out after 500 ms",
      });
    } finally {
      await limited.close();
    }
  });

  it("runs timers inside a run and clears them when the run ends", async () => {
    const prepared = await prepareCode(
      runtime,
      `let leftover = 0;
       export default { name: "timers", version: "1", async run() {
         const order = [];
         const t = setTimeout(() => order.push("cancelled"), 5); clearTimeout(t);
         setTimeout(() => order.push("b"), 20);
         setTimeout(() => order.push("a"), 5);
         setImmediate(() => order.push("immediate"));
         queueMicrotask(() => order.push("micro"));
         let ticks = 0; const iv = setInterval(() => { if (++ticks === 3) clearInterval(iv); }, 5);
         await new Promise((r) => setTimeout(r, 60));
         setTimeout(() => { leftover++; }, 1);  // never fires: the run is over
         this.$emit({ order, ticks, leftover });
       } };`,
    );
    const inv = invocation(prepared);
    const first = await runtime.invoke(inv);
    expect(first.emits[0]?.event).to.deep.equal({ order: ["micro", "immediate", "a", "b"], ticks: 3, leftover: 0 });
    await new Promise((r) => setTimeout(r, 50));
    const second = await runtime.invoke(inv);
    expect((second.emits[0]?.event as { leftover: number }).leftover).to.equal(0);
  });

  it("globals made on first use behave as ordinary ones: one value each, shared with the modules, and replaceable before first use", async () => {
    const prepared = await prepareCode(
      runtime,
      `module.exports = { name: "lazy", version: "1", async run() {
         const req = (n) => require(n);
         const mine = async () => "mine";
         globalThis.fetch = mine; // replaced before anything read it
         const out = {
           fetchReplaced: fetch === mine && globalThis.fetch === mine,
           bufferShared: Buffer === req("buffer").Buffer && Buffer === globalThis.Buffer,
           eventsShared: req("events") === req("events").EventEmitter && process instanceof req("events"),
           processShared: process === req("process") && process === globalThis.process,
           urlShared: URL === req("url").URL,
           sameTwice: req("util") === req("util") && req("axios") === req("axios"),
           kinds: [typeof URL, typeof TextEncoder, typeof Headers, typeof AbortController, typeof crypto.randomUUID],
           notEnumerable: Object.keys(globalThis).filter((k) => ["Buffer", "URL", "process", "fetch"].includes(k)),
           text: new TextDecoder().decode(new TextEncoder().encode("héllo")),
           base64: btoa("hi") + atob("aGk="),
           fetched: await fetch(),
         };
         for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
           try { req(name); out[name] = "loaded"; } catch (e) { out[name] = e.message.startsWith('require("' + name + '"): this module is not available') ? "refused" : e.message; }
         }
         this.$emit(out);
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits[0].event).to.deep.equal({
      fetchReplaced: true,
      bufferShared: true,
      eventsShared: true,
      processShared: true,
      urlShared: true,
      sameTwice: true,
      kinds: ["function", "function", "function", "function", "function"],
      notEnumerable: [],
      text: "héllo",
      base64: "aGk=hi",
      fetched: "mine",
      toString: "refused",
      constructor: "refused",
      __proto__: "refused",
      hasOwnProperty: "refused",
    });
  });

  it("supports dynamic require of provided built-ins and explains the others", async () => {
    const prepared = await prepareCode(
      runtime,
      `module.exports = { name: "dyn", version: "1", async run() {
         const name = ["cry", "pto"].join("");
         const out = { hash: require(name).createHash("sha1").update("x").digest("hex") };
         try { require(["f", "s"].join("")); } catch (e) { out.fs = e.message; }
         this.$emit(out);
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.emits[0].event).to.deep.equal({
      hash: crypto.createHash("sha1").update("x").digest("hex"),
      fs: 'require("fs"): this module is not available in the sandbox (only modules imported by name in the code are bundled)',
    });
  });
});
