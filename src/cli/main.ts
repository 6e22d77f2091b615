import { Command } from "commander";
import { loadConfig, parseRoles, ROLES } from "../config.js";
import { startNode, VERSION, type RunningNode } from "../node.js";
import type { Config } from "../config.js";
import { failWith } from "./output.js";
import { adminCommands } from "./admin.js";
import { auditCommand } from "./audit.js";
import { projectionsCommands } from "./projections.js";
import { accountCommands } from "./accounts.js";

const program = new Command("headwater").version(VERSION).description("Headwater: self-hosted event sources");

program
  .command("start")
  .description("run a node: serve the API and run sources (all roles, embedded log and bus unless configured otherwise)")
  .option("--roles <roles>", `comma-separated subset of ${ROLES.join(",")} (default: all, or HEADWATER_ROLES)`)
  .action(async (options: { roles?: string }) => {
    let node: RunningNode;
    let config: Config;
    try {
      const loaded = loadConfig();
      config = options.roles ? { ...loaded, roles: parseRoles(options.roles) } : loaded;
      node = await startNode(config);
    } catch (error) {
      failWith(error);
    }
    if (node.url) process.stdout.write(`Headwater listening on ${node.url} (API at ${node.publicUrl}/v1)\n`);
    else process.stdout.write(`Headwater node running without the api role (roles: ${config.roles.join(",")})\n`);
    if (node.bootstrapKey) {
      process.stdout.write(`Bootstrap operator API key (shown once, keep it): ${node.bootstrapKey}\n`);
    }
    let closing = false;
    const shutdown = () => {
      if (closing) return;
      closing = true;
      node.close(config.shutdownGraceMs).then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.on("SIGINT", shutdown);
    process.on("SIGTERM", shutdown);
  });

adminCommands(program);
auditCommand(program);
projectionsCommands(program);
accountCommands(program);

await program.parseAsync(process.argv);
