// The outbound HTTP client: the private-address guard (with DNS pinning), timeouts, size limits,
// redirects. Real servers on loopback; the guard is lifted only where a test says so.
import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { classifyAddress } from "../../src/net/addressPolicy.js";
import { OutboundError, outboundRequest, resolveAllowedAddress } from "../../src/net/outbound.js";

interface Server {
  port: number;
  url: string;
  hits: string[];
  close(): Promise<void>;
}

async function serve(handler: http.RequestListener): Promise<Server> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(OutboundError);
  return err as OutboundError;
}

describe("net: address policy", () => {
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.5.6.7", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "metadata"],
    ["169.254.1.1", "linkLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["100.100.100.200", "metadata"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "uniqueLocal"],
    ["fd00:ec2::254", "metadata"],
    ["fe80::1", "linkLocal"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["64:ff9b::a00:1", "rfc6052"],
    ["2002:7f00:1::", "6to4"],
  ];
  for (const [address, range] of refused) {
    it(`refuses ${address} (${range})`, () => {
      expect(classifyAddress(address)).to.deep.include({ allowed: false, range });
    });
  }
  for (const address of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"]) {
    it(`allows ${address}`, () => {
      expect(classifyAddress(address)).to.deep.include({ allowed: true, range: "unicast" });
    });
  }
});

describe("net: outbound requests", function () {
  this.timeout(15_000);
  let server: Server;
  before(async () => {
    server = await serve((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/hello") res.writeHead(200, { "content-type": "text/plain", "x-test": "1" }).end("hello");
      else if (url.pathname === "/echo") {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString()));
        req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null })));
      } else if (url.pathname === "/redirect") res.writeHead(302, { location: "/echo" }).end();
      else if (url.pathname === "/loop") res.writeHead(302, { location: "/loop" }).end();
      else if (url.pathname === "/cross") res.writeHead(307, { location: `http://localhost:${server.port}/echo` }).end();
      else if (url.pathname === "/never") {
        /* never answers */
      } else if (url.pathname === "/declared-big") res.writeHead(200, { "content-length": String(2 * 1024 * 1024) }).end("x".repeat(2 * 1024 * 1024));
      else if (url.pathname === "/chunked-big") {
        res.writeHead(200);
        for (let i = 0; i < 64; i++) res.write("y".repeat(32 * 1024));
        res.end();
      } else if (url.pathname === "/gzip-bomb") {
        res.writeHead(200, { "content-encoding": "gzip" }).end(zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024)));
      } else if (url.pathname === "/gzip") res.writeHead(200, { "content-encoding": "gzip" }).end(zlib.gzipSync("compressed text"));
      else res.writeHead(404).end();
    });
  });
  after(async () => server.close());

  it("refuses loopback by default and never opens a connection", async () => {
    const err = await failure(outboundRequest({ url: `${server.url}/hello` }));
    expect(err.code).to.equal("BLOCKED_ADDRESS");
    expect(err.message).to.equal(
      `refusing to connect to 127.0.0.1 (127.0.0.1, loopback address); set HEADWATER_ALLOW_PRIVATE_NETWORKS=1 to allow private networks`,
    );
    expect(server.hits).to.not.include("GET /hello");
  });

  it("refuses a name whose DNS answers include a private address", async () => {
    const resolve = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ];
    const err = await failure(resolveAllowedAddress("mixed.example.test", { resolve }));
    expect(err.code).to.equal("BLOCKED_ADDRESS");
    expect(err.message).to.include("10.0.0.7");
  });

  it("connects to the address it checked, not to a second DNS answer (no rebinding)", async () => {
    // The OS cannot resolve this name: reaching the server proves the checked answer was used.
    let lookups = 0;
    const resolve = async () => {
      lookups++;
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const res = await outboundRequest({ url: `http://rebind.headwater.invalid:${server.port}/hello` }, { allowPrivateNetworks: true, resolve });
    expect(res.status).to.equal(200);
    expect(res.body.toString()).to.equal("hello");
    expect(res.remoteAddress).to.equal("127.0.0.1");
    expect(lookups).to.equal(1);
  });

  it("reaches loopback when private networks are allowed", async () => {
    const res = await outboundRequest({ url: `${server.url}/hello` }, { allowPrivateNetworks: true });
    expect(res).to.deep.include({ status: 200, redirected: false });
    expect(res.headers["x-test"]).to.equal("1");
    expect(res.body.toString()).to.equal("hello");
  });

  it("follows redirects, turning a 302 POST into a GET, and drops credentials across origins", async () => {
    const allow = { allowPrivateNetworks: true };
    const res = await outboundRequest({ url: `${server.url}/redirect`, method: "POST", body: "data", headers: { authorization: "Bearer t" } }, allow);
    expect(res.redirected).to.equal(true);
    expect(JSON.parse(res.body.toString())).to.deep.equal({ method: "GET", body: "", auth: "Bearer t" });
    const cross = await outboundRequest({ url: `${server.url}/cross`, method: "POST", body: "keep", headers: { authorization: "Bearer t" } }, allow);
    expect(JSON.parse(cross.body.toString())).to.deep.equal({ method: "POST", body: "keep", auth: null });
    const err = await failure(outboundRequest({ url: `${server.url}/loop`, maxRedirects: 3 }, allow));
    expect(err.code).to.equal("TOO_MANY_REDIRECTS");
    const manual = await outboundRequest({ url: `${server.url}/redirect`, maxRedirects: 0 }, allow);
    expect(manual.status).to.equal(302);
  });

  it("times out a server that never answers", async () => {
    const started = Date.now();
    const err = await failure(outboundRequest({ url: `${server.url}/never`, timeoutMs: 300 }, { allowPrivateNetworks: true }));
    expect(err.code).to.equal("TIMEOUT");
    expect(Date.now() - started).to.be.lessThan(3000);
  });

  it("limits the response size, declared, chunked or compressed", async () => {
    const allow = { allowPrivateNetworks: true };
    for (const p of ["/declared-big", "/chunked-big", "/gzip-bomb"]) {
      const err = await failure(outboundRequest({ url: `${server.url}${p}`, maxResponseBytes: 1024 * 1024 }, allow));
      expect(err.code, p).to.equal("RESPONSE_TOO_LARGE");
    }
    const gz = await outboundRequest({ url: `${server.url}/gzip` }, allow);
    expect(gz.body.toString()).to.equal("compressed text");
  });

  it("accepts only http and https URLs", async () => {
    for (const url of ["ftp://example.com/x", "file:///etc/passwd", "not a url"]) {
      expect((await failure(outboundRequest({ url }))).code, url).to.equal("INVALID_URL");
    }
  });
});
