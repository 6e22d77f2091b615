// Fetching the text of modules a component imports by relative path or URL (multi-file
// components): through the guarded outbound client, with a timeout and a size limit.
import { outboundRequest } from "../../net/outbound.js";

export type ModuleLoader = (url: string) => Promise<string>;

export class ModuleFetchError extends Error {
  override readonly name = "ModuleFetchError";
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
    if (res.status < 200 || res.status >= 300) throw new ModuleFetchError(`cannot load ${url}: the server answered ${res.status}`);
    return res.body.toString("utf8");
  };
}
