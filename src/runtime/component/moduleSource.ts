// Fetching the text of modules a component imports by relative path or URL (multi-file
// components): through the guarded outbound client, with a timeout and a size limit.
import { outboundRequest } from "../../net/outbound.js";

export type ModuleLoader = (url: string) => Promise<string>;

export class ModuleFetchError extends Error {
  override readonly name = "ModuleFetchError";
  /** The module does not exist there (404, or not among the uploaded files): another candidate may. */
  constructor(
    message: string,
    readonly missing = false,
  ) {
    super(message);
  }
}

/** Uploaded files of a multi-file component live under this base: relative imports resolve among them. */
export const UPLOAD_BASE = "upload:///";

/** Serves the files of an uploaded component (`upload:///<path>`); anything else is not there. */
export function uploadedFilesLoader(files: Readonly<Record<string, string>>, fallback?: ModuleLoader): ModuleLoader {
  return async (url) => {
    if (!url.startsWith(UPLOAD_BASE)) {
      if (fallback) return fallback(url);
      throw new ModuleFetchError(`cannot load ${url}: an uploaded component imports only its own files`, true);
    }
    const path = decodeURIComponent(url.slice(UPLOAD_BASE.length));
    const text = Object.prototype.hasOwnProperty.call(files, path) ? files[path] : undefined;
    if (text === undefined) throw new ModuleFetchError(`${path} is not among the uploaded files`, true);
    return text;
  };
}

export function httpModuleLoader(opts: { allowPrivateNetworks?: boolean; timeoutMs?: number; maxBytes?: number } = {}): ModuleLoader {
  return async (url) => {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new ModuleFetchError(`cannot load ${url}: only http and https module URLs are supported`);
    }
    const res = await outboundRequest(
      {
        url,
        timeoutMs: opts.timeoutMs ?? 10_000,
        maxResponseBytes: opts.maxBytes ?? 1024 * 1024,
        headers: { accept: "text/javascript, application/javascript, text/plain, */*" },
      },
      { allowPrivateNetworks: opts.allowPrivateNetworks ?? false },
    );
    if (res.status < 200 || res.status >= 300) {
      throw new ModuleFetchError(`cannot load ${url}: the server answered ${res.status}`, res.status === 404 || res.status === 410);
    }
    return res.body.toString("utf8");
  };
}
