// Shared set-up for runtime tests: a real Runtime (child processes, isolates) on a temp cache dir,
// fixture loading, invocation building and loopback HTTP servers.
import { randomUUID } from "node:crypto";
import { promises as fs, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { prepareComponent, Runtime, type Invocation, type PreparedComponent, type RuntimeOptions } from "../../src/runtime/index.js";

// dist/test/runtime -> repository root
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const FIXTURES = path.join(ROOT, "test/fixtures/components");

const created: string[] = [];
process.once("exit", () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

export async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `headwater-${prefix}-`));
  created.push(dir);
  return dir;
}

export async function startRuntime(opts: Partial<RuntimeOptions> = {}): Promise<Runtime> {
  const runtime = new Runtime({ cacheDir: opts.cacheDir ?? (await tempDir("cache")), workers: 2, timeoutMs: 5000, memoryMb: 64, ...opts });
  await runtime.ready();
  return runtime;
}

export async function fixture(rel: string): Promise<string> {
  return fs.readFile(path.join(FIXTURES, rel), "utf8");
}

export async function prepareFixture(runtime: Runtime, rel: string): Promise<PreparedComponent> {
  return prepareComponent({ code: await fixture(rel), typescript: rel.endsWith(".mts") || rel.endsWith(".ts") }, { runtime });
}

export async function prepareCode(runtime: Runtime, code: string): Promise<PreparedComponent> {
  return prepareComponent({ code }, { runtime });
}

export function invocation(prepared: PreparedComponent, over: Partial<Invocation> = {}): Invocation {
  return {
    invocationId: randomUUID(),
    ownerId: "u_test",
    sourceId: `dc_${randomUUID().slice(0, 8)}`,
    codeHash: prepared.codeHash,
    bundleHash: prepared.bundleHash,
    bundle: prepared.bundle,
    method: "run",
    props: {},
    event: {},
    db: {},
    ...over,
  };
}

export interface TestServer {
  url: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

export async function startServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
): Promise<TestServer> {
  const requests: TestServer["requests"] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves a directory read-only (for multi-file components fetched by URL). */
export async function serveDirectory(dir: string): Promise<TestServer> {
  return startServer((req, res) => {
    const file = path.join(dir, decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    if (!file.startsWith(dir)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, "utf8").then(
      (text) => res.writeHead(200, { "content-type": "text/javascript" }).end(text),
      () => res.writeHead(404).end("not found"),
    );
  });
}
