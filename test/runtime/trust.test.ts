// The runners' outbound HTTPS trusts the certificate authorities the operator adds with
// NODE_EXTRA_CA_CERTS, as the node's own does: a real HTTPS server on loopback with a certificate
// of a CA made for the test (openssl), and real runner children.
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { promises as fs } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime, tempDir } from "./support.js";

const FETCHING = `export default { name: "trusting", version: "1", async run() {
  let outcome;
  try { const r = await fetch(TARGET); outcome = r.status + " " + (await r.text()); }
  catch (err) { outcome = err.message; }
  this.$emit({ outcome, env: process.env });
} };`;

describe("runtime: the operator's extra certificate authorities", function () {
  this.timeout(60_000);
  let server: https.Server;
  let url: string;
  let caFile: string;

  before(async () => {
    const dir = await tempDir("tls");
    const key = path.join(dir, "key.pem");
    const cert = path.join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=headwater-test"],
        ...["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
      ],
      { stdio: "ignore" },
    );
    server = https.createServer({ key: await fs.readFile(key), cert: await fs.readFile(cert) }, (_req, res) => res.end("trusted"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // The machine's own extra authorities (if any) stay trusted beside the test's.
    const own = process.env.NODE_EXTRA_CA_CERTS ? await fs.readFile(process.env.NODE_EXTRA_CA_CERTS, "utf8").catch(() => "") : "";
    caFile = path.join(dir, "cas.pem");
    await fs.writeFile(caFile, `${own}\n${await fs.readFile(cert, "utf8")}`);
  });
  after(() => server.close());

  async function fetchWith(extraCas: string | undefined): Promise<string> {
    const saved = process.env.NODE_EXTRA_CA_CERTS;
    if (extraCas === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
    else process.env.NODE_EXTRA_CA_CERTS = extraCas;
    let runtime: Runtime;
    try {
      runtime = await startRuntime({ workers: 1, allowPrivateNetworks: true });
    } finally {
      if (saved === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = saved;
    }
    try {
      const prepared = await prepareCode(runtime, FETCHING.replace("TARGET", JSON.stringify(url)));
      const outcome = await runtime.invoke(invocation(prepared));
      expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
      const event = outcome.emits[0].event as { outcome: string; env: unknown };
      expect(event.env, "the component sees none of the runner's environment").to.deep.equal({
        PD_COMPONENT: "1",
        NODE_ENV: "production",
        TMPDIR: "/tmp",
      });
      return event.outcome;
    } finally {
      await runtime.close();
    }
  }

  it("a server whose authority the operator added is trusted; without it the same request is refused", async () => {
    expect(await fetchWith(caFile)).to.equal("200 trusted");
    expect(await fetchWith(undefined)).to.match(/self-signed certificate/);
  });
});
