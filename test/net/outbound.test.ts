// The outbound HTTP client: the private-address guard (with DNS pinning), timeouts, size limits,
// redirects. Real servers on loopback; the guard is lifted only where a test says so.
import { expect } from "chai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";
import { OutboundError, outboundRequest, resolveAllowedAddress, resolveUrlAddress } from "../../src/net/outbound.js";

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

describe("net: URL to checked address", () => {
  // Literal hosts must never reach the resolver; names get a fixed answer, so no real DNS is used.
  const asked: string[] = [];
  const answers: Record<string, string> = {
    "localhost.": "127.0.0.1",
    "public.example.test.": "2a00:1450:4001:80b::200e",
    "compat.example.test": "::127.0.0.1",
  };
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const address = answers[hostname];
    if (!address) throw new Error("ENOTFOUND");
    return [{ address, family: address.includes(":") ? 6 : 4 }];
  };
  beforeEach(() => (asked.length = 0));

  // [URL, what the refusal names: "address, range address[ carrying IPv4]"]
  const refused: [string, string][] = [
    ["http://2130706433/", "127.0.0.1, loopback address"], // decimal
    ["http://0x7f.1/", "127.0.0.1, loopback address"], // hex, two parts
    ["http://0x7f000001/", "127.0.0.1, loopback address"],
    ["http://0177.0.0.1/", "127.0.0.1, loopback address"], // octal
    ["http://127.1/", "127.0.0.1, loopback address"],
    ["http://127.0.0.1./", "127.0.0.1, loopback address"], // trailing dot
    ["http://%31%32%37.0.0.1/", "127.0.0.1, loopback address"], // percent-encoded
    ["http://\uff11\uff12\uff17.0.0.1/", "127.0.0.1, loopback address"], // fullwidth digits
    ["http://user:pw@127.0.0.1:8080/x", "127.0.0.1, loopback address"],
    ["http://0/", "0.0.0.0, unspecified address"],
    ["http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254, metadata address"],
    ["http://[::1]/", "::1, loopback address"],
    ["http://[0:0:0:0:0:0:0:1]:8080/", "::1, loopback address"],
    ["http://[::127.0.0.1]/", "::7f00:1, ipv4Compatible address carrying 127.0.0.1"], // the reported bypasses
    ["http://[::a9fe:a9fe]/", "::a9fe:a9fe, ipv4Compatible address carrying 169.254.169.254"],
    ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1, ipv4Mapped address carrying 127.0.0.1"],
    ["http://[::ffff:8.8.8.8]/", "::ffff:808:808, ipv4Mapped address carrying 8.8.8.8"],
    ["http://[::ffff:0:10.0.0.1]/", "::ffff:0:a00:1, rfc6145 address carrying 10.0.0.1"],
    ["http://[64:ff9b::169.254.169.254]/", "64:ff9b::a9fe:a9fe, rfc6052 address carrying 169.254.169.254"],
    ["http://[2002:c0a8:101::1]/", "2002:c0a8:101::1, 6to4 address carrying 192.168.1.1"],
    ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136:e378:8000:63bf:80ff:fffe, teredo address carrying 127.0.0.1"],
    ["http://[FE80::1]/", "fe80::1, linkLocal address"],
    ["http://[fd00:ec2::254]/", "fd00:ec2::254, metadata address"],
    ["http://localhost./", "127.0.0.1, loopback address"], // a name with a trailing dot goes to DNS
    ["http://compat.example.test/", "::7f00:1, ipv4Compatible address carrying 127.0.0.1"], // dotted answer from a resolver
  ];
  for (const [url, named] of refused) {
    it(`refuses ${url}`, async () => {
      const err = await failure(resolveUrlAddress(url, { resolve }));
      expect(err.code).to.equal("BLOCKED_ADDRESS");
      expect(err.message).to.include(`(${named});`);
    });
  }

  for (const url of [
    "http://[fe80::1%25eth0]/",
    "http://[fe80::1%eth0]/",
    "http://[2001:db8::1]./",
    "http://1.2.3.4.5/",
    "http://08.0.0.1/",
  ]) {
    it(`rejects ${url} as an invalid URL`, async () => {
      expect((await failure(resolveUrlAddress(url, { resolve }))).code).to.equal("INVALID_URL");
      expect(asked).to.deep.equal([]);
    });
  }

  it("refuses a scoped literal handed over as a hostname", async () => {
    const err = await failure(resolveAllowedAddress("fe80::1%eth0", { resolve }));
    expect(err.code).to.equal("BLOCKED_ADDRESS");
    expect(err.message).to.include("invalid address");
  });

  const allowed: [string, string, 4 | 6][] = [
    ["http://8.8.8.8/", "8.8.8.8", 4],
    ["https://1.1.1.1:443/dns-query", "1.1.1.1", 4],
    ["http://134744072/", "8.8.8.8", 4], // decimal form of a public address: the normalised address passes
    ["http://8.8.8.8./", "8.8.8.8", 4],
    ["http://[2606:4700:4700::1111]/", "2606:4700:4700::1111", 6],
    ["http://[2a00:1450:4001:80b:0:0:0:200e]/", "2a00:1450:4001:80b::200e", 6],
    ["http://public.example.test./", "2a00:1450:4001:80b::200e", 6],
  ];
  for (const [url, address, family] of allowed) {
    it(`allows ${url} as ${address}`, async () => {
      expect(await resolveUrlAddress(url, { resolve })).to.deep.equal({ address, family });
    });
  }

  it("asks the resolver only for names, and with the host as the URL normalised it", async () => {
    await resolveUrlAddress("http://0x7f.1/", { resolve }).catch(() => undefined);
    await resolveUrlAddress("http://[::127.0.0.1]/", { resolve }).catch(() => undefined);
    await resolveUrlAddress("http://PUBLIC.Example.TEST./", { resolve });
    expect(asked).to.deep.equal(["public.example.test."]);
  });

  it("lets every form through when private networks are allowed", async () => {
    const allow = { allowPrivateNetworks: true, resolve };
    expect(await resolveUrlAddress("http://0x7f.1/", allow)).to.deep.equal({ address: "127.0.0.1", family: 4 });
    expect(await resolveUrlAddress("http://[::1]/", allow)).to.deep.equal({ address: "::1", family: 6 });
    expect(await resolveUrlAddress("http://localhost./", allow)).to.deep.equal({ address: "127.0.0.1", family: 4 });
  });
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
        req.on("end", () =>
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null })),
        );
      } else if (url.pathname === "/redirect") res.writeHead(302, { location: "/echo" }).end();
      else if (url.pathname === "/loop") res.writeHead(302, { location: "/loop" }).end();
      else if (url.pathname === "/cross") res.writeHead(307, { location: `http://localhost:${server.port}/echo` }).end();
      else if (url.pathname === "/never") {
        /* never answers */
      } else if (url.pathname === "/declared-big")
        res.writeHead(200, { "content-length": String(2 * 1024 * 1024) }).end("x".repeat(2 * 1024 * 1024));
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

  it("refuses the loopback server behind IPv4-compatible, mapped and numeric URL forms", async () => {
    for (const host of ["[::127.0.0.1]", "[::ffff:127.0.0.1]", "0x7f.1", "2130706433"]) {
      const err = await failure(outboundRequest({ url: `http://${host}:${server.port}/hello` }));
      expect(err.code, host).to.equal("BLOCKED_ADDRESS");
    }
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
    const res = await outboundRequest(
      { url: `http://rebind.headwater.invalid:${server.port}/hello` },
      { allowPrivateNetworks: true, resolve },
    );
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
    const res = await outboundRequest(
      { url: `${server.url}/redirect`, method: "POST", body: "data", headers: { authorization: "Bearer t" } },
      allow,
    );
    expect(res.redirected).to.equal(true);
    expect(JSON.parse(res.body.toString())).to.deep.equal({ method: "GET", body: "", auth: "Bearer t" });
    const cross = await outboundRequest(
      { url: `${server.url}/cross`, method: "POST", body: "keep", headers: { authorization: "Bearer t" } },
      allow,
    );
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
