// WHATWG URL and URLSearchParams. Parsing is delegated to the host's URL parser (exact semantics,
// one synchronous bridge call); URLSearchParams is plain JS.
import { hostSync } from "./bridge.js";

export interface UrlParts {
  href: string;
  origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  hash: string;
}

function formEncode(s: string): string {
  return encodeURIComponent(s)
    .replace(/%20/g, "+")
    .replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

function formDecode(s: string): string {
  const plus = s.replace(/\+/g, " ");
  try {
    return decodeURIComponent(plus);
  } catch {
    return plus.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
}

export class URLSearchParams {
  #list: [string, string][] = [];
  #onChange: ((search: string) => void) | undefined;

  constructor(init?: unknown) {
    if (init === undefined || init === null) return;
    if (typeof init === "string") this.#parse(init);
    else if (init instanceof URLSearchParams) this.#list = init.#list.map(([k, v]) => [k, v]);
    else if (typeof init === "object" && typeof (init as Iterable<unknown>)[Symbol.iterator] === "function") {
      for (const pair of init as Iterable<unknown>) {
        const arr = Array.from(pair as Iterable<unknown>);
        if (arr.length !== 2) throw new TypeError("Each query pair must be an iterable [name, value] tuple");
        this.#list.push([String(arr[0]), String(arr[1])]);
      }
    } else if (typeof init === "object") {
      for (const [k, v] of Object.entries(init as Record<string, unknown>)) this.#list.push([k, String(v)]);
    } else this.#parse(String(init));
  }

  /** @internal links a URL's searchParams back to the URL. */
  static _linked(search: string, onChange: (search: string) => void): URLSearchParams {
    const params = new URLSearchParams(search);
    params.#onChange = onChange;
    return params;
  }

  /** @internal */
  _reset(search: string): void {
    this.#list = [];
    this.#parse(search);
  }

  #parse(input: string): void {
    const s = input.startsWith("?") ? input.slice(1) : input;
    for (const part of s.split("&")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      const name = eq === -1 ? part : part.slice(0, eq);
      const value = eq === -1 ? "" : part.slice(eq + 1);
      this.#list.push([formDecode(name), formDecode(value)]);
    }
  }

  #update(): void {
    this.#onChange?.(this.toString());
  }

  get size(): number {
    return this.#list.length;
  }
  append(name: string, value: unknown): void {
    this.#list.push([String(name), String(value)]);
    this.#update();
  }
  delete(name: string, value?: unknown): void {
    this.#list = this.#list.filter(([k, v]) => !(k === String(name) && (value === undefined || v === String(value))));
    this.#update();
  }
  get(name: string): string | null {
    const found = this.#list.find(([k]) => k === String(name));
    return found ? found[1] : null;
  }
  getAll(name: string): string[] {
    return this.#list.filter(([k]) => k === String(name)).map(([, v]) => v);
  }
  has(name: string, value?: unknown): boolean {
    return this.#list.some(([k, v]) => k === String(name) && (value === undefined || v === String(value)));
  }
  set(name: string, value: unknown): void {
    const key = String(name);
    const index = this.#list.findIndex(([k]) => k === key);
    if (index === -1) this.#list.push([key, String(value)]);
    else {
      this.#list[index] = [key, String(value)];
      this.#list = this.#list.filter(([k], i) => k !== key || i === index);
    }
    this.#update();
  }
  sort(): void {
    this.#list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    this.#update();
  }
  forEach(cb: (value: string, name: string, params: URLSearchParams) => void, thisArg?: unknown): void {
    for (const [k, v] of this.#list) cb.call(thisArg, v, k, this);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const [k, v] of this.#list) yield [k, v];
  }
  *keys(): IterableIterator<string> {
    for (const [k] of this.#list) yield k;
  }
  *values(): IterableIterator<string> {
    for (const [, v] of this.#list) yield v;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
  toString(): string {
    return this.#list.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`).join("&");
  }
  get [Symbol.toStringTag]() {
    return "URLSearchParams";
  }
}

export class URL {
  #parts: UrlParts;
  #params: URLSearchParams | undefined;

  constructor(input: unknown, base?: unknown) {
    this.#parts = hostSync<UrlParts>("url.parse", {
      input: String(input instanceof URL ? input.href : input),
      base: base === undefined ? undefined : String(base instanceof URL ? base.href : base),
    });
  }

  static canParse(input: unknown, base?: unknown): boolean {
    try {
      new URL(input, base);
      return true;
    } catch {
      return false;
    }
  }

  #set(part: keyof UrlParts, value: unknown): void {
    this.#parts = hostSync<UrlParts>("url.set", { href: this.#parts.href, part, value: String(value) });
    if (part !== "hash") this.#params?._reset(this.#parts.search);
  }

  get href() {
    return this.#parts.href;
  }
  set href(v: string) {
    this.#parts = hostSync<UrlParts>("url.parse", { input: String(v) });
    this.#params?._reset(this.#parts.search);
  }
  get origin() {
    return this.#parts.origin;
  }
  get protocol() {
    return this.#parts.protocol;
  }
  set protocol(v: string) {
    this.#set("protocol", v);
  }
  get username() {
    return this.#parts.username;
  }
  set username(v: string) {
    this.#set("username", v);
  }
  get password() {
    return this.#parts.password;
  }
  set password(v: string) {
    this.#set("password", v);
  }
  get host() {
    return this.#parts.host;
  }
  set host(v: string) {
    this.#set("host", v);
  }
  get hostname() {
    return this.#parts.hostname;
  }
  set hostname(v: string) {
    this.#set("hostname", v);
  }
  get port() {
    return this.#parts.port;
  }
  set port(v: string) {
    this.#set("port", v);
  }
  get pathname() {
    return this.#parts.pathname;
  }
  set pathname(v: string) {
    this.#set("pathname", v);
  }
  get search() {
    return this.#parts.search;
  }
  set search(v: string) {
    this.#set("search", v);
  }
  get hash() {
    return this.#parts.hash;
  }
  set hash(v: string) {
    this.#set("hash", v);
  }
  get searchParams(): URLSearchParams {
    if (!this.#params) {
      this.#params = URLSearchParams._linked(this.#parts.search, (search) => {
        this.#parts = hostSync<UrlParts>("url.set", { href: this.#parts.href, part: "search", value: search });
      });
    }
    return this.#params;
  }
  toString() {
    return this.#parts.href;
  }
  toJSON() {
    return this.#parts.href;
  }
  get [Symbol.toStringTag]() {
    return "URL";
  }
  [Symbol.for("nodejs.util.inspect.custom")]() {
    return `URL '${this.#parts.href}'`;
  }
}
