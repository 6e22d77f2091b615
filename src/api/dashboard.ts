// The web dashboard: static files (src/ui/static, plain JavaScript modules, no build step) served
// at / and /dashboard/<file>, read once at start. Every answer carries a strict policy: scripts and
// styles from this origin only (no inline script), no framing, no sniffing, no referrer (stream
// tokens travel in SSE URLs). The page talks to the API with the key it holds in memory.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Context, Next } from "koa";
import { DomainError } from "../../commands/decider.js";

/** dist/src/api → the sources' src/ui/static (plain files, not compiled). */
export const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "src", "ui", "static");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
  "Cache-Control": "no-cache",
};

interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

function readFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!fs.existsSync(dir)) return files;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const type = TYPES[path.extname(entry.name)];
    if (!type) continue;
    const body = fs.readFileSync(full);
    const name = path.relative(dir, full).split(path.sep).join("/");
    files.set(name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` });
  }
  return files;
}

export function dashboard(dir: string = DASHBOARD_DIR) {
  const files = readFiles(dir);
  return async function serveDashboard(ctx: Context, next: Next): Promise<void> {
    const name =
      ctx.path === "/" || ctx.path === "/dashboard" || ctx.path === "/dashboard/"
        ? "index.html"
        : /^\/dashboard\/(.+)$/.exec(ctx.path)?.[1];
    const file = name === undefined ? undefined : files.get(name);
    if (!file || (ctx.method !== "GET" && ctx.method !== "HEAD")) {
      // A mistyped dashboard address is missing, not a question of keys.
      if (name !== undefined && (ctx.method === "GET" || ctx.method === "HEAD")) {
        throw new DomainError("not_found", `the dashboard has no file ${JSON.stringify(name).slice(0, 100)}`);
      }
      await next();
      return;
    }
    ctx.state.route = name === "index.html" ? "/" : "/dashboard/{file}";
    ctx.set(DASHBOARD_HEADERS);
    ctx.set("ETag", file.etag);
    ctx.type = file.type;
    if (ctx.get("if-none-match") === file.etag) {
      ctx.status = 304;
      return;
    }
    ctx.body = file.body;
  };
}
