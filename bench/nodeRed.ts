// Node-RED 4.1.8, the peer `bench:peers` and `bench:cost` measure against: installed at bench time
// into .cache/node-red (never a project dependency) and started with one flow,
// http in → function → http response, that answers as a source endpoint does.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { autocannonPath } from "./loadgen.js";

export const NODE_RED_VERSION = "4.1.8";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const peerCache = path.join(repoRoot, ".cache", "node-red");
/** What the readiness probe posts. */
const body = JSON.stringify({ order: "ord_1234", total: 4210 });

/** Node-RED (and autocannon when the project has none installed) into the cache, once. */
export function installPeers(): void {
  const installed = (name: string) => {
    const file = path.join(peerCache, "node_modules", name, "package.json");
    return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version : undefined;
  };
  const wanted: string[] = [];
  if (installed("node-red") !== NODE_RED_VERSION) wanted.push(`node-red@${NODE_RED_VERSION}`);
  if (!autocannonPath(repoRoot)) {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    wanted.push(`autocannon@${pkg.devDependencies.autocannon ?? "9"}`);
  }
  if (wanted.length === 0) return;
  mkdirSync(peerCache, { recursive: true });
  console.log(`installing ${wanted.join(", ")} into ${peerCache}`);
  execFileSync("npm", ["install", "--prefix", peerCache, "--no-audit", "--no-fund", "--omit=dev", "--no-save", ...wanted], {
    stdio: "inherit",
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function untilAnswers(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Node-RED with the editor and admin API off, one flow: POST /e/plain → function → http response. */
export async function startNodeRed(): Promise<{ url: string; child: ChildProcess; userDir: string }> {
  const userDir = mkdtempSync(path.join(tmpdir(), "nodered-"));
  const port = await freePort();
  writeFileSync(
    path.join(userDir, "settings.js"),
    `module.exports = { uiHost: "127.0.0.1", uiPort: ${port}, httpAdminRoot: false, flowFile: "flows.json", credentialSecret: false,
      logging: { console: { level: "warn", metrics: false, audit: false } }, diagnostics: { enabled: false },
      externalModules: { autoInstall: false }, telemetry: { enabled: false } };\n`,
  );
  const flows = [
    { id: "tab1", type: "tab", label: "bench" },
    { id: "in1", type: "http in", z: "tab1", url: "/e/plain", method: "post", upload: false, swaggerDoc: "", wires: [["fn1"]] },
    {
      id: "fn1",
      type: "function",
      z: "tab1",
      func: 'msg.payload = { success: true, invocation_id: "inv_nodered00000000" };\nreturn msg;',
      outputs: 1,
      wires: [["out1"]],
    },
    { id: "out1", type: "http response", z: "tab1", statusCode: "", headers: {}, wires: [] },
  ];
  writeFileSync(path.join(userDir, "flows.json"), JSON.stringify(flows));
  const red = path.join(peerCache, "node_modules", "node-red", "red.js");
  const child = spawn(process.execPath, [red, "--userDir", userDir, "--settings", path.join(userDir, "settings.js")], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}/e/plain`;
  await untilAnswers(url, 60_000);
  return { url, child, userDir };
}
