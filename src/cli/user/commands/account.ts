// login, logout, whoami: the profile and the user behind it.
import type { Command } from "commander";
import { HeadwaterClient, type UserView } from "../client.js";
import { action, withConnection, type CommonOptions } from "../common.js";
import { configFile, normalizeApiUrl, profileName, readProfile, removeProfile, saveProfile } from "../profile.js";
import { askLine, askSecret, interactive } from "../prompt.js";
import { CliError, EXIT, usage } from "../../failure.js";

const DEFAULT_URL = "http://127.0.0.1:8080";

export function accountCommands(program: Command): void {
  withConnection(
    program
      .command("login")
      .description("save a profile (API URL and key), checked against the server first")
      .addHelpText(
        "after",
        "\nOn a terminal it asks for what is not given; scripts pass --api-url and --api-key (or HEADWATER_API_URL and\n" +
          "HEADWATER_API_KEY). The profile is written to $XDG_CONFIG_HOME/headwater/config.json (mode 0600).",
      ),
  ).action(
    action(async ({ out }, options: CommonOptions) => {
      const name = profileName(options);
      const saved = readProfile(name);
      let url = options.apiUrl ?? process.env.HEADWATER_API_URL;
      let key = options.apiKey ?? process.env.HEADWATER_API_KEY;
      if ((url === undefined || key === undefined) && !interactive()) {
        throw usage("not a terminal: pass --api-url and --api-key (or set HEADWATER_API_URL and HEADWATER_API_KEY)");
      }
      url ??= await askLine("Headwater API URL", saved?.api_url ?? DEFAULT_URL);
      const apiUrl = normalizeApiUrl(url);
      key ??= await askSecret("API key (hw_…)");
      if (key === "") throw usage("an API key is required");
      const client = new HeadwaterClient({ apiUrl, apiKey: key, profile: name });
      const spinner = out.spinner(`checking the key with ${apiUrl}`);
      let user: UserView;
      try {
        user = (await client.get<{ data: UserView }>("/users/me")).data;
      } catch (error) {
        if (error instanceof CliError && error.code === "unauthorized") {
          throw new CliError("unauthorized", `${apiUrl} refused this API key: nothing was saved`, EXIT.auth);
        }
        throw error;
      } finally {
        spinner.stop();
      }
      saveProfile(name, { api_url: apiUrl, api_key: key, user_id: user.id, username: user.username });
      if (out.json)
        out.document({
          profile: name,
          api_url: apiUrl,
          config_file: configFile(),
          user: { id: user.id, username: user.username, email: user.email },
        });
      else
        out.line(
          `Logged in to ${out.c.bold(apiUrl)} as ${out.c.bold(user.username)} (${user.id}); profile "${name}" saved in ${configFile()}`,
        );
    }),
  );

  withConnection(program.command("logout").description("forget a profile (its API key stays valid on the server)")).action(
    action(async ({ out }, options: CommonOptions) => {
      const name = profileName(options);
      const removed = removeProfile(name);
      if (out.json) out.document({ profile: name, removed });
      else out.line(removed ? `Logged out: profile "${name}" removed from ${configFile()}` : `No profile "${name}": nothing to do`);
    }),
  );

  withConnection(program.command("whoami").description("the user behind the API key, with today's usage")).action(
    action(async ({ out, client }) => {
      const api = client();
      const user = (await api.get<{ data: UserView }>("/users/me")).data;
      if (out.json) return out.document(user);
      const paid = user.billing_period_start_ts !== undefined;
      const ofQuota = (used: number | undefined, quota: number | undefined, unit = "") =>
        used === undefined ? undefined : `${used.toLocaleString("en-US")}${unit} of ${quota?.toLocaleString("en-US") ?? "?"}${unit}`;
      out.fields([
        ["user", `${out.c.bold(user.username)} (${user.id})`],
        ["email", user.email],
        ["server", `${api.connection.apiUrl} (profile "${api.connection.profile}")`],
        ["plan", paid ? "paid" : "free"],
        ["orgs", user.orgs.length ? user.orgs.map((o) => `${o.name} (${o.id})`).join(", ") : "none"],
        ["invocations today", ofQuota(user.daily_invocations_used, user.daily_invocations_quota)],
        ["compute today", ofQuota(user.daily_compute_time_used, user.daily_compute_time_quota, " ms")],
        [
          "billing period",
          paid
            ? `${new Date(user.billing_period_start_ts! * 1000).toISOString().slice(0, 10)} to ${new Date(user.billing_period_end_ts! * 1000).toISOString().slice(0, 10)}`
            : undefined,
        ],
        ["invocations", paid ? (user.billing_period_invocations ?? 0).toLocaleString("en-US") : undefined],
      ]);
    }),
  );
}
