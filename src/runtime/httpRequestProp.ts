// Pipedream's `http_request` prop: its configured value describes one request (the form the HTTP
// app's actions and Pipedream's Connect forms send), and the component calls
// `this.<prop>.execute()`. One pure rule, used by the host to refuse a wrong value at deploy or run
// and by the isolate to turn the value into the request it sends. Our own reading of that form,
// not Pipedream's code.

export interface Problem {
  /** Below the prop: "" for the value itself, ".url", ".headers[1].name", … */
  readonly path: string;
  readonly message: string;
}

/** What `execute()` sends, in the platform axios's terms. */
export interface HttpRequestConfig {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly params: Record<string, string>;
  readonly data?: unknown;
  readonly auth?: { username: string; password: string };
}

type Rec = Record<string, unknown>;

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);
const HTTP_URL = /^https?:\/\/[^\s/?#]+[^\s]*$/i;
const METHOD = /^[A-Za-z]{1,16}$/;
/** RFC 7230 token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BODY_MODES = ["raw", "fields"];
const AUTH_TYPES = ["none", "basic", "bearer"];

/** A name/value pair's value as sent: text, numbers and booleans as text. */
function pairValue(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") return String(v);
  if (v === undefined || v === null) return "";
  return undefined;
}

/**
 * Headers, params or body fields: `[{name, value, disabled?}]` (Pipedream's form; empty names and
 * disabled rows are skipped) or an object of names to values.
 */
function pairs(given: unknown, where: string, problems: Problem[], headerNames: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  if (given === undefined || given === null) return out;
  const add = (name: unknown, value: unknown, at: string) => {
    if (typeof name !== "string") return problems.push({ path: `${at}.name`, message: "must be a string" });
    if (name.trim() === "") return;
    if (headerNames && !HEADER_NAME.test(name))
      return problems.push({ path: `${at}.name`, message: `${JSON.stringify(name)} is not a valid header name` });
    const text = pairValue(value);
    if (text === undefined) return problems.push({ path: `${at}.value`, message: "must be a string, number or boolean" });
    if (headerNames && /[\r\n\0]/.test(text)) return problems.push({ path: `${at}.value`, message: "must not contain CR, LF or NUL" });
    out[name] = text;
  };
  if (Array.isArray(given)) {
    given.forEach((row, i) => {
      const at = `${where}[${i}]`;
      if (!isRec(row)) problems.push({ path: at, message: "must be an object with name and value" });
      else if (row.disabled !== true) add(row.name, row.value, at);
    });
  } else if (isRec(given)) {
    for (const [name, value] of Object.entries(given)) add(name, value, `${where}.${name}`);
  } else {
    problems.push({ path: where, message: "must be an array of {name, value} or an object of names to values" });
  }
  return out;
}

const headerKey = (headers: Record<string, string>, name: string) => Object.keys(headers).find((k) => k.toLowerCase() === name);

/**
 * The request a configured `http_request` value describes, with every problem of the value (an
 * empty list when it can be sent). `method` defaults to GET; GET and HEAD carry no body.
 */
export function readHttpRequest(value: unknown): { config?: HttpRequestConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  if (!isRec(value)) return { problems: [{ path: "", message: "must be an object with url (and method, headers, params, body, auth)" }] };
  const url = value.url;
  if (typeof url !== "string" || url.trim() === "")
    problems.push({ path: ".url", message: url === undefined || url === "" ? "is required" : "must be a string" });
  else if (!HTTP_URL.test(url.trim())) problems.push({ path: ".url", message: "must be an http or https URL" });
  const rawMethod = value.method ?? "GET";
  if (typeof rawMethod !== "string" || !METHOD.test(rawMethod))
    problems.push({ path: ".method", message: "must be an HTTP method such as GET or POST" });
  const method = typeof rawMethod === "string" ? rawMethod.toUpperCase() : "GET";
  const headers = pairs(value.headers, ".headers", problems, true);
  const params = pairs(value.params, ".params", problems, false);

  let data: unknown;
  const body = value.body;
  if (body !== undefined && body !== null) {
    if (!isRec(body)) problems.push({ path: ".body", message: "must be an object with contentType and raw (text) or fields" });
    else {
      const contentType = body.contentType ?? "application/json";
      const mode = body.mode ?? body.type ?? (body.fields !== undefined && body.raw === undefined ? "fields" : "raw");
      if (typeof contentType !== "string" || /[\r\n\0]/.test(contentType))
        problems.push({ path: ".body.contentType", message: "must be a media type such as application/json, or none" });
      else if (typeof mode !== "string" || !BODY_MODES.includes(mode))
        problems.push({ path: ".body.mode", message: 'must be "raw" or "fields"' });
      else if (contentType !== "none") {
        if (mode === "raw") {
          if (body.raw !== undefined && body.raw !== null && typeof body.raw !== "string")
            problems.push({ path: ".body.raw", message: "must be a string (the body's text)" });
          else if (typeof body.raw === "string" && body.raw !== "") data = body.raw;
        } else {
          const fields = pairs(body.fields, ".body.fields", problems, false);
          if (Object.keys(fields).length > 0) data = fields;
        }
        if (method === "GET" || method === "HEAD") data = undefined;
        if (data !== undefined && headerKey(headers, "content-type") === undefined) headers["Content-Type"] = contentType;
      }
    }
  }

  let auth: HttpRequestConfig["auth"];
  const givenAuth = value.auth;
  if (givenAuth !== undefined && givenAuth !== null) {
    const type = isRec(givenAuth) ? (givenAuth.type ?? (givenAuth.token !== undefined ? "bearer" : "basic")) : undefined;
    if (!isRec(givenAuth))
      problems.push({ path: ".auth", message: 'must be an object: {type: "basic", username, password} or {type: "bearer", token}' });
    else if (typeof type !== "string" || !AUTH_TYPES.includes(type))
      problems.push({ path: ".auth.type", message: 'must be "none", "basic" or "bearer"' });
    else if (type === "basic") {
      const { username, password } = givenAuth;
      if (typeof username !== "string") problems.push({ path: ".auth.username", message: "must be a string" });
      if (password !== undefined && password !== null && typeof password !== "string")
        problems.push({ path: ".auth.password", message: "must be a string" });
      if (typeof username === "string") auth = { username, password: typeof password === "string" ? password : "" };
    } else if (type === "bearer") {
      const token = givenAuth.token;
      if (typeof token !== "string" || token === "" || /[\r\n\0]/.test(token))
        problems.push({ path: ".auth.token", message: "must be a non-empty string" });
      // The configured header wins over the auth, as a header set by hand would.
      else if (headerKey(headers, "authorization") === undefined) headers["Authorization"] = `Bearer ${token}`;
    }
  }
  if (problems.length > 0) return { problems };
  return {
    config: { method, url: (url as string).trim(), headers, params, ...(data !== undefined ? { data } : {}), ...(auth ? { auth } : {}) },
    problems,
  };
}
