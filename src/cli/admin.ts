import type { Command } from "commander";
import type { EventStore } from "../store/eventStore.js";
import { loadConfig } from "../config.js";
import { systemClock } from "../ids.js";
import { announceNewDataDir, failWith, printJson } from "./output.js";
import type { Plan } from "../../commands/users/user.js";
import fs from "node:fs";
import path from "node:path";
import { DomainError } from "../../commands/decider.js";
import { operatorModules, type OperatorModules } from "./operatorModules.js";

/**
 * Runs an operator action against the configured log (the same one a running server uses) and,
 * when a server runs on this data directory, answers only once that server can see the change.
 */
async function withStore(
  action: (store: EventStore, m: OperatorModules) => Promise<{ output: unknown; position: number | undefined }>,
): Promise<void> {
  const config = loadConfig();
  announceNewDataDir(config);
  const m = await operatorModules();
  const store = await m.openEventStore(config.eventStore);
  try {
    const { output, position } = await action(store, m);
    if (position !== undefined) await m.waitForLocalServer(config, position);
    printJson(output);
  } catch (error) {
    failWith(error);
  } finally {
    await store.close();
  }
}

const accounts = (store: EventStore, m: OperatorModules) => new m.Accounts(store, systemClock);
const options = { metadata: { by: "operator-cli" } };

function plan(value: string): Plan {
  if (value !== "free" && value !== "paid") throw new DomainError("usage", `--plan must be free or paid, got "${value}"`);
  return value;
}

export function adminCommands(program: Command): void {
  const admin = program.command("admin").description("users, organizations, API keys and the component registry");

  const user = admin.command("user").description("users");
  user
    .command("create")
    .requiredOption("--username <username>")
    .requiredOption("--email <email>")
    .option("--plan <plan>", "free or paid", "free")
    .description("create a user and print its id and first API key")
    .action((o: { username: string; email: string; plan: string }) => {
      const chosen = plan(o.plan); // a usage error before anything is opened
      return withStore(async (store, m) => {
        const created = await accounts(store, m).createUser({ username: o.username, email: o.email, plan: chosen }, options);
        return { output: { id: created.id, api_key: created.apiKey }, position: created.position };
      });
    });
  user
    .command("set-plan <userId>")
    .requiredOption("--plan <plan>", "free or paid")
    .description("move a user to the free or the paid plan")
    .action((userId: string, o: { plan: string }) => {
      const chosen = plan(o.plan);
      return withStore(async (store, m) => {
        const written = await accounts(store, m).setPlan(userId, chosen, options);
        return { output: { id: userId, plan: chosen }, position: written.position };
      });
    });

  user
    .command("list")
    .description("every user: id, username, email, plan, operator, created_at (folded from the log)")
    .action(() =>
      withStore(async (store, m) => {
        // The users projection applied to the log in memory: the same rows a node's read model
        // holds, whether or not a server runs (it holds the data directory) and whatever the store.
        const db = m.openReadModels(":memory:");
        try {
          await m.rebuildProjections(store, db, [m.usersProjection]);
          const rows = db
            .prepare<[], { id: string; username: string; email: string; plan: string; operator: number; created_at: number }>(
              "SELECT id, username, email, plan, operator, created_at FROM users ORDER BY created_at, username",
            )
            .all();
          return { output: rows.map((row) => ({ ...row, operator: row.operator === 1 })), position: undefined };
        } finally {
          db.close();
        }
      }),
    );

  const org = admin.command("org").description("organizations");
  org
    .command("create")
    .requiredOption("--name <name>")
    .requiredOption("--owner <userId>")
    .option("--email <email>", "the organization's contact address")
    .description("create an organization owned by a user")
    .action((o: { name: string; owner: string; email?: string }) =>
      withStore(async (store, m) => {
        const { position, ...created } = await accounts(store, m).createOrg(
          { name: o.name, ownerId: o.owner, ...(o.email !== undefined ? { email: o.email } : {}) },
          options,
        );
        return { output: created, position };
      }),
    );
  org
    .command("add-member <orgId> <userId>")
    .description("make a user a member of an organization")
    .action((orgId: string, userId: string) =>
      withStore(async (store, m) => {
        const written = await accounts(store, m).addOrgMember(orgId, userId, options);
        return { output: { org_id: orgId, user_id: userId, role: "member" }, position: written.position };
      }),
    );

  const registry = admin.command("registry").description("the public component registry");
  registry
    .command("publish <file>")
    .description("publish a component file to the registry (needs a key and a semantic version)")
    .action((file: string) =>
      withStore(async (store, m) => {
        const config = loadConfig();
        const code = fs.readFileSync(path.resolve(file), "utf8");
        const runtime = new m.IsolatedRuntime(config.runtime);
        // Publishing reads nothing from the read models: an empty in-memory one will do.
        const components = new m.ComponentsReadModel(m.openReadModels(":memory:"));
        const catalog = new m.ComponentCatalog({ store, runtime, components, cache: new m.ComponentCache(components), clock: systemClock });
        try {
          const result = await catalog.publish(code, options);
          return {
            output: { id: result.componentId, key: result.key, version: result.version, published: result.published },
            position: result.position,
          };
        } finally {
          await runtime.close();
        }
      }),
    );

  const key = admin.command("key").description("API keys");
  key
    .command("create <userId>")
    .description("issue a new API key for a user")
    .action((userId: string) =>
      withStore(async (store, m) => {
        const issued = await accounts(store, m).issueKey(userId, {}, options);
        return { output: { id: issued.id, api_key: issued.apiKey }, position: issued.position };
      }),
    );
  key
    .command("revoke <apiKey>")
    .description("revoke an API key (the key itself, or its k_ id)")
    .action((apiKey: string) =>
      withStore(async (store, m) => {
        const revoked = await accounts(store, m).revokeKey(apiKey, undefined, options);
        return { output: { id: revoked.id, revoked: true }, position: revoked.position };
      }),
    );
}
