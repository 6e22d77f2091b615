// `this.<prop>` of an `http_request` prop: the configured request's fields, plus `execute()`,
// which sends it through the platform axios (the host's guarded outbound HTTP, as every request a
// component makes) and resolves with the response body, as Pipedream's HTTP actions return it.
/* eslint-disable @typescript-eslint/no-require-imports -- require keeps the axios modules out of runs that never call execute() */
import { isRecord, type AnyRecord } from "./component.js";
import { defineValue } from "./primordials.js";
import { readHttpRequest } from "../httpRequestProp.js";

export function httpRequestProp(name: string, configured: unknown): AnyRecord {
  const request: AnyRecord = isRecord(configured) ? { ...configured } : {};
  // Not enumerable: the prop still reads (and serializes) as the configured request.
  defineValue(
    request,
    "execute",
    async function execute(): Promise<unknown> {
      // The fields as they are now: a component may have set one (a computed URL) before sending.
      const { config, problems } = readHttpRequest({ ...request });
      if (config === undefined) {
        const first = problems[0];
        throw new TypeError(`this.${name}.execute(): the request${first.path} ${first.message}`);
      }
      const { axios } = require("./modules/platform.js") as typeof import("./modules/platform.js");
      return axios(undefined, { ...config });
    },
    false,
  );
  return request;
}
