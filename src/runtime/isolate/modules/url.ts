// Node's url module: WHATWG URL plus the legacy parse / format / resolve.
import { URL, URLSearchParams } from "../url.js";
import { parse as parseQuery } from "./querystring.js";

export { URL, URLSearchParams };

export interface LegacyUrl {
  protocol: string | null;
  slashes: boolean | null;
  auth: string | null;
  host: string | null;
  port: string | null;
  hostname: string | null;
  hash: string | null;
  search: string | null;
  query: string | Record<string, string | string[]> | null;
  pathname: string | null;
  path: string | null;
  href: string;
}

export function parse(input: string, parseQueryString = false): LegacyUrl {
  const m = /^(?:([a-zA-Z][a-zA-Z0-9+.-]*:))?(?:(\/\/)(?:([^@/?#]*)@)?([^/?#:]*|\[[^\]]*\])(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/.exec(
    String(input).trim(),
  );
  const [, protocol, slashes, auth, hostname, port, pathname, search, hash] = m ?? [];
  const host = hostname ? hostname.toLowerCase() + (port ? `:${port}` : "") : null;
  const query = search ? search.slice(1) : null;
  return {
    protocol: protocol ? protocol.toLowerCase() : null,
    slashes: slashes ? true : null,
    auth: auth ? decodeURIComponent(auth) : null,
    host,
    port: port || null,
    hostname: hostname ? hostname.toLowerCase() : null,
    hash: hash ?? null,
    search: search ?? (parseQueryString ? "" : null),
    query: parseQueryString ? parseQuery(query ?? "") : query,
    pathname: pathname || (slashes ? "/" : null),
    path: (pathname || (slashes ? "/" : "")) + (search ?? "") || null,
    href: String(input),
  };
}

export function format(u: string | URL | Partial<LegacyUrl>): string {
  if (typeof u === "string") return u;
  if (u instanceof URL) return u.href;
  const protocol = u.protocol ? (u.protocol.endsWith(":") ? u.protocol : u.protocol + ":") : "";
  const host = u.host ?? (u.hostname ? u.hostname + (u.port ? `:${u.port}` : "") : "");
  const auth = u.auth ? encodeURIComponent(u.auth).replace(/%3A/i, ":") + "@" : "";
  const slashes = u.slashes || host ? "//" : "";
  let search = u.search ?? "";
  if (!search && u.query && typeof u.query === "object") {
    const qs = Object.entries(u.query)
      .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${encodeURIComponent(k)}=${encodeURIComponent(String(x))}`))
      .join("&");
    if (qs) search = "?" + qs;
  }
  return `${protocol}${slashes}${auth}${host}${u.pathname ?? ""}${search}${u.hash ?? ""}`;
}

export function resolve(from: string, to: string): string {
  const base = new URL(from, "resolve://host/");
  const resolved = new URL(to, base);
  if (resolved.protocol === "resolve:") return resolved.pathname + resolved.search + resolved.hash;
  return resolved.href;
}

export default { URL, URLSearchParams, parse, format, resolve };
