// Node's querystring module (parse, stringify, escape, unescape).

export function escape(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

export function unescape(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
}

function primitive(v: unknown): string {
  if (typeof v === "string") return v;
  if ((typeof v === "number" && isFinite(v)) || typeof v === "bigint") return String(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  return "";
}

export function stringify(obj: unknown, sep = "&", eq = "=", options: { encodeURIComponent?: (s: string) => string } = {}): string {
  const enc = options.encodeURIComponent ?? escape;
  if (obj === null || typeof obj !== "object") return "";
  const parts: string[] = [];
  for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
    const key = enc(primitive(k)) + eq;
    if (Array.isArray(v)) for (const item of v) parts.push(key + enc(primitive(item)));
    else parts.push(key + enc(primitive(v)));
  }
  return parts.join(sep);
}

export function parse(
  str: unknown,
  sep = "&",
  eq = "=",
  options: { maxKeys?: number; decodeURIComponent?: (s: string) => string } = {},
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  if (typeof str !== "string" || str.length === 0) return out;
  const dec = options.decodeURIComponent ?? unescape;
  const maxKeys = options.maxKeys ?? 1000;
  let pieces = str.split(sep);
  if (maxKeys > 0) pieces = pieces.slice(0, maxKeys);
  for (const piece of pieces) {
    if (piece === "") continue;
    const idx = piece.indexOf(eq);
    const k = dec((idx >= 0 ? piece.slice(0, idx) : piece).replace(/\+/g, " "));
    const v = idx >= 0 ? dec(piece.slice(idx + eq.length).replace(/\+/g, " ")) : "";
    const existing = out[k];
    if (existing === undefined) out[k] = v;
    else if (Array.isArray(existing)) existing.push(v);
    else out[k] = [existing, v];
  }
  return out;
}

export const decode = parse;
export const encode = stringify;
export default { parse, stringify, escape, unescape, decode, encode };
