// axios 1.x's AxiosHeaders: a header set whose names match without regard to case, keeping the
// case they were first set with. The headers are the instance's own enumerable properties, as in
// axios, so `{ ...headers }` and Object.entries see them; the methods live on the prototype.
// SDKs build them (`new AxiosHeaders(...)`, apify-client) and request interceptors call
// `config.headers.set(...)`, which is why axios's config.headers is one of these there too.

type HeaderValue = string | string[] | number | boolean | null | undefined;
type Matcher = boolean | RegExp | ((this: AxiosHeaders, value: string, name: string) => unknown);

const TOKEN = /^[-_a-zA-Z0-9^`|~,!#$%&'*+.]+$/;

function findKey(headers: AxiosHeaders, name: string): string | undefined {
  const wanted = name.toLowerCase();
  return Object.keys(headers).find((key) => key.toLowerCase() === wanted);
}

function normalizeValue(value: HeaderValue): HeaderValue {
  if (value === false || value === null || value === undefined) return value;
  return Array.isArray(value) ? value.map((v) => normalizeValue(v) as string) : String(value).replace(/[\r\n]+$/, "");
}

/** Raw header text ("Name: value" lines), as axios's parseHeaders reads it. */
function parseRaw(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const line of text.split("\n")) {
    const at = line.indexOf(":");
    if (at <= 0) continue;
    pairs.push([line.slice(0, at).trim(), line.slice(at + 1).trim()]);
  }
  return pairs;
}

function isHeaderObject(value: unknown): value is Record<string, HeaderValue> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class AxiosHeaders {
  [name: string]: unknown;

  constructor(headers?: unknown) {
    if (headers !== undefined && headers !== null) this.set(headers as Record<string, HeaderValue>);
  }

  /** set(name, value, rewrite?) or set(object | AxiosHeaders | raw text, rewrite?). */
  set(header: string | Record<string, HeaderValue> | AxiosHeaders, valueOrRewrite?: unknown, rewrite?: boolean): this {
    const setOne = (name: string, value: HeaderValue, force: boolean | undefined) => {
      const key = findKey(this, name);
      const current = key === undefined ? undefined : this[key];
      if (key === undefined || current === undefined || force === true || (force === undefined && current !== false)) {
        if (key !== undefined && key !== name) delete this[key];
        this[key ?? name] = normalizeValue(value);
      }
    };
    if (typeof header === "string") {
      const name = header.trim();
      if (name !== "" && !TOKEN.test(name) && name.includes(":")) {
        for (const [n, v] of parseRaw(name)) setOne(n, v, valueOrRewrite as boolean | undefined);
      } else setOne(name, valueOrRewrite as HeaderValue, rewrite);
    } else if (isHeaderObject(header)) {
      for (const [name, value] of Object.entries(header)) setOne(name, value, valueOrRewrite as boolean | undefined);
    }
    return this;
  }

  /** The value; with a parser: true (key=value tokens as an object), a RegExp (its match) or a function. */
  get(name: string, parser?: Matcher): unknown {
    const key = findKey(this, name);
    if (key === undefined) return undefined;
    const value = this[key] as HeaderValue;
    if (parser === undefined || parser === false) return value;
    if (parser === true) {
      const tokens: Record<string, string> = {};
      for (const match of String(value).matchAll(/([^\s,;=]+)\s*(?:=\s*([^,;]+))?/g)) tokens[match[1]] = match[2] ?? "";
      return tokens;
    }
    if (typeof parser === "function") return parser.call(this, String(value), key);
    return parser.exec(String(value));
  }

  has(name: string, matcher?: Matcher): boolean {
    const key = findKey(this, name);
    if (key === undefined || this[key] === undefined) return false;
    if (matcher === undefined) return true;
    const value = String(this[key]);
    if (typeof matcher === "function") return Boolean(matcher.call(this, value, key));
    if (matcher instanceof RegExp) return matcher.test(value);
    return true;
  }

  delete(name: string | string[], matcher?: Matcher): boolean {
    let deleted = false;
    for (const one of Array.isArray(name) ? name : [name]) {
      const key = findKey(this, one);
      if (key !== undefined && (matcher === undefined || this.has(key, matcher))) {
        delete this[key];
        deleted = true;
      }
    }
    return deleted;
  }

  clear(matcher?: RegExp): boolean {
    let deleted = false;
    for (const key of Object.keys(this)) {
      if (matcher === undefined || matcher.test(key)) {
        delete this[key];
        deleted = true;
      }
    }
    return deleted;
  }

  /** Merges names that differ only in case; with `format`, names become Title-Case. */
  normalize(format?: boolean): this {
    for (const key of Object.keys(this)) {
      const name = format
        ? key
            .trim()
            .toLowerCase()
            .replace(/([a-z\d])(\w*)/g, (_, c: string, rest: string) => c.toUpperCase() + rest)
        : key;
      if (name !== key) {
        const value = this[key];
        delete this[key];
        this[name] = value;
      }
    }
    return this;
  }

  concat(...targets: unknown[]): AxiosHeaders {
    return AxiosHeaders.concat(this, ...targets);
  }

  /** The headers as a plain object (null and false ones left out); `asStrings` joins arrays. */
  toJSON(asStrings?: boolean): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [key, value] of Object.entries(this)) {
      if (value === null || value === false || value === undefined) continue;
      out[key] = asStrings && Array.isArray(value) ? value.join(", ") : (value as string | string[]);
    }
    return out;
  }

  toString(): string {
    return Object.entries(this.toJSON())
      .map(([key, value]) => `${key}: ${String(value)}`)
      .join("\n");
  }

  get [Symbol.toStringTag](): string {
    return "AxiosHeaders";
  }

  [Symbol.iterator](): IterableIterator<[string, unknown]> {
    return Object.entries(this.toJSON())[Symbol.iterator]();
  }

  static from(thing: unknown): AxiosHeaders {
    return thing instanceof AxiosHeaders ? thing : new AxiosHeaders(thing);
  }

  static concat(first: unknown, ...targets: unknown[]): AxiosHeaders {
    const computed = new AxiosHeaders(first);
    for (const target of targets) computed.set(target as Record<string, HeaderValue>);
    return computed;
  }
}

// axios's shorthands for its common headers: setContentType/getContentType/hasContentType, …
for (const header of ["Content-Type", "Content-Length", "Accept", "Accept-Encoding", "User-Agent", "Authorization"]) {
  const suffix = header.replace(/-/g, "");
  Object.defineProperties(AxiosHeaders.prototype, {
    [`set${suffix}`]: {
      value(this: AxiosHeaders, value: HeaderValue, rewrite?: boolean) {
        return this.set(header, value, rewrite);
      },
    },
    [`get${suffix}`]: {
      value(this: AxiosHeaders, parser?: Matcher) {
        return this.get(header, parser);
      },
    },
    [`has${suffix}`]: {
      value(this: AxiosHeaders, matcher?: Matcher) {
        return this.has(header, matcher);
      },
    },
  });
}
