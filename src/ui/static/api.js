// The dashboard's only link to the server: the REST API with the key held in this module's
// memory (never stored, never in a URL), and live streams opened with single-use stream tokens,
// since a browser's EventSource cannot send an Authorization header.

let apiKey = "";
/** Called when the API refuses the signed-in key (revoked, or its user deleted): the session is over. */
let onKeyRefused = () => {};
/** The organization the pages act in ({ id, name }), or undefined for the signed-in user's own. */
let workspace;

export class ApiError extends Error {
  constructor(status, body) {
    super(body && typeof body.error === "string" ? body.error : `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
    this.details = Array.isArray(body?.details) ? body.details : [];
  }
}

export const signedIn = () => apiKey !== "";

export async function signIn(key) {
  apiKey = key.trim();
  try {
    // A refused key here is the sign-in form's to report, not a session ending.
    return (await send("GET", "/v1/users/me")).data;
  } catch (error) {
    apiKey = "";
    throw error;
  }
}

/** `handler(error)` runs once when a request of the session is refused 401; the key is then forgotten. */
export function whenKeyRefused(handler) {
  onKeyRefused = handler;
}

export function signOut() {
  apiKey = "";
  workspace = undefined;
}

export const currentWorkspace = () => workspace;
export function setWorkspace(org) {
  workspace = org;
}

/** Where the current workspace's resources of one kind are listed (`sources`, `webhooks`, …). */
export const listPath = (kind) => (workspace ? `/v1/orgs/${encodeURIComponent(workspace.id)}/${kind}` : `/v1/users/me/${kind}`);

/** A create request acting in the current workspace: the API takes the organization as `org_id` in the query. */
export const createPath = (path) => (workspace ? `${path}?org_id=${encodeURIComponent(workspace.id)}` : path);

export async function request(method, path, body) {
  const key = apiKey;
  try {
    return await send(method, path, body);
  } catch (error) {
    // Only the key the request was sent with: an answer arriving after a sign-out or a new sign-in ends nothing.
    if (error instanceof ApiError && error.status === 401 && key !== "" && key === apiKey) {
      signOut();
      onKeyRefused(error);
    }
    throw error;
  }
}

async function send(method, path, body) {
  const headers = { authorization: `Bearer ${apiKey}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const text = await response.text();
  let parsed;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = { error: text };
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
export const put = (path, body) => request("PUT", path, body);

/** Every page of a paginated listing. */
export async function listAll(path, max = 1000) {
  const items = [];
  let after;
  for (;;) {
    const separator = path.includes("?") ? "&" : "?";
    const page = await get(`${path}${separator}limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`);
    items.push(...page.data);
    if (page.data.length < 100 || !page.page_info?.end_cursor || items.length >= max) return items;
    after = page.page_info.end_cursor;
  }
}

export const del = (path) => request("DELETE", path);

/**
 * Follows the SSE stream of a source (`kind` "sources") or a workflow ("workflows"): each item
 * once, in order. Every (re)connection mints a new stream token and resumes after the last id
 * received (`last_event_id`), so a dropped connection neither loses nor repeats items. The stream
 * is opened on this page's origin (the path the token's `url` names), which the page's
 * Content-Security-Policy allows whatever public URL the server is configured with. `accept`
 * drops items the caller does not show (they still move the resume point). Returns a function
 * that stops it.
 */
export function follow(kind, id, { channel, after, accept, onItem, onState }) {
  let lastId = after;
  let source;
  let stopped = false;
  let delay = 500;
  let timer;
  const path = `${kind}/${encodeURIComponent(id)}`;

  async function connect() {
    if (stopped) return;
    onState("connecting");
    let token;
    try {
      token = (await post(`/v1/${path}/stream_tokens`)).data.token;
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 404)) {
        onState("ended", error.message);
        return;
      }
      retry();
      return;
    }
    if (stopped) return;
    const query = new URLSearchParams({ stream_token: token });
    if (channel !== undefined) query.set("event_name", channel);
    if (lastId) query.set("last_event_id", lastId);
    source = new EventSource(`/${path}/sse?${query}`);
    source.onopen = () => {
      delay = 500;
      onState("live");
    };
    source.onmessage = (message) => {
      lastId = message.lastEventId || lastId;
      const item = JSON.parse(message.data);
      if (accept && !accept(item)) return;
      onItem(item);
    };
    source.addEventListener("end", (message) => {
      source.close();
      stopped = true;
      let reason = "stream ended";
      try {
        reason = JSON.parse(message.data).reason;
      } catch {
        // keep the default
      }
      onState("ended", reason);
      // Access is revoked when the key is, or when the item left the user's sight (an organization
      // left): asking who the key is tells them apart, and a refused key ends the session.
      if (reason === "access revoked") get("/v1/users/me").catch(() => {});
    });
    // The token is spent: the browser's own reconnect would be refused, so reconnect with a new one.
    source.onerror = () => {
      source.close();
      retry();
    };
  }

  function retry() {
    if (stopped) return;
    onState("reconnecting");
    timer = setTimeout(connect, delay);
    delay = Math.min(delay * 2, 15_000);
  }

  void connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    source?.close();
  };
}
