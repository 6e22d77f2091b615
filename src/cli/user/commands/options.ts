// `headwater options <component> <prop>`: the choices a prop offers while a component is being
// configured, from POST /v1/components/{key_or_id}/props/{prop}/options: its static list, or what
// its options() method returns for the props given so far (an app prop bound with
// --prop app='{"authProvisionId":"apn_…"}'). --all follows the pages (page numbers and contexts).
import type { Command } from "commander";
import { action, collectProp, propsFrom, withConnection, type CommonOptions } from "../common.js";
import { compact } from "../output.js";
import { usage } from "../../failure.js";

interface OptionsOptions extends CommonOptions {
  readonly prop?: Record<string, unknown>;
  readonly props?: string;
  readonly page?: string;
  readonly prevContext?: string;
  readonly all?: boolean;
  readonly org?: string;
}

interface OptionsPage {
  readonly options: { label: string; value: unknown }[];
  readonly context: unknown;
}

/** Pages followed by --all at most (an options() that never runs dry stops here). */
const MAX_PAGES = 50;

const hasNextPage = (context: unknown): boolean =>
  typeof context === "object" && context !== null && Object.values(context).some((v) => v !== undefined && v !== null && v !== "");

export function optionsCommands(program: Command): void {
  withConnection(
    program
      .command("options <component> <prop>")
      .description("the options of a component's prop (a key of yours or the registry's, or an sc_ id), for the props given so far")
      .option("--prop <key=value>", "a prop value configured so far, repeatable; JSON when it parses, else text", collectProp)
      .option("--props <json>", "prop values configured so far, as one JSON object (--prop values win)")
      .option("--page <n>", "the page to ask for (0-indexed, default 0)")
      .option("--prev-context <json>", "the context the previous page answered with")
      .option("--all", `follow the pages until one comes back empty or without a next page (at most ${MAX_PAGES})`)
      .option("--org <org_id>", "as an organization (its keys, its connected accounts)"),
  ).action(
    action(async ({ out, client, json }, component: string, prop: string, options: OptionsOptions) => {
      const configured = propsFrom(options) ?? {};
      let page = 0;
      if (options.page !== undefined) {
        page = Number(options.page);
        if (!Number.isSafeInteger(page) || page < 0) throw usage("--page must be a whole number, 0 or more");
      }
      let context: unknown = null;
      if (options.prevContext !== undefined) {
        try {
          context = JSON.parse(options.prevContext);
        } catch (error) {
          throw usage(`--prev-context is not JSON: ${(error as Error).message}`);
        }
      }
      const api = client();
      const path = `/components/${encodeURIComponent(component)}/props/${encodeURIComponent(prop)}/options`;
      const org = options.org ? { query: { org_id: options.org } } : {};
      const all: OptionsPage["options"] = [];
      let last: OptionsPage;
      for (let n = 0; ; n++) {
        last = (
          await api.request<{ data: OptionsPage }>("POST", path, {
            body: { configured_props: configured, page, prev_context: context },
            ...org,
          })
        ).data;
        all.push(...last.options);
        if (!options.all || last.options.length === 0 || n + 1 >= MAX_PAGES) break;
        // Paged by context when options() gives one, else by page number.
        if (last.context !== null && !hasNextPage(last.context)) break;
        context = last.context;
        page++;
      }
      if (json) {
        out.document(options.all ? { options: all, context: last.context } : last);
        return;
      }
      if (all.length === 0) out.note(`${prop}: no options`);
      else
        out.table(
          ["LABEL", "VALUE"],
          all.map((o) => [o.label, compact(o.value)]),
        );
      if (!options.all && hasNextPage(last.context)) {
        out.note(`more: --prev-context '${JSON.stringify(last.context)}' --page ${page + 1} (or --all)`);
      }
    }),
  );
}
