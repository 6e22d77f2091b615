// The `headwater` command: user commands that talk to a server's REST API (login, deploy, list,
// events, …) and operator commands that work on the local data directory and log (start, admin,
// audit, projections). Every failure, a usage error included, ends with one error on stderr:
// JSON with --json and always for operator commands, else one line (src/cli/failure.ts).
import { Command } from "commander";
import { loadConfig, parseRoles, ROLES } from "../config.js";
import type { Config } from "../config.js";
import type { RunningNode } from "../node.js";
import { VERSION } from "../version.js";
import { announceNewDataDir, failWith } from "./output.js";
import { operatorModules } from "./operatorModules.js";
import { adminCommands } from "./admin.js";
import { auditCommand } from "./audit.js";
import { projectionsCommands } from "./projections.js";
import { EXIT, exitWith } from "./failure.js";
import { completionCommand } from "./completion.js";
import { colorsFor } from "./user/output.js";
import { accountCommands } from "./user/commands/account.js";
import { sourceCommands } from "./user/commands/sources.js";
import { listCommands } from "./user/commands/list.js";
import { eventCommands } from "./user/commands/events.js";
import { routingCommands } from "./user/commands/routing.js";
import { actionCommands } from "./user/commands/actions.js";
import { optionsCommands } from "./user/commands/options.js";
import { workflowCommands } from "./user/commands/workflows.js";
import { connectedAccountCommands } from "./accounts.js";

const OPERATOR_COMMANDS = new Set(["start", "admin", "audit", "projections"]);

const args = process.argv.slice(2);
const beforeDashes = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
/** The command asked for (the first word that is not an option): operator commands always answer in JSON. */
const operator = OPERATOR_COMMANDS.has(beforeDashes.find((a) => !a.startsWith("-")) ?? "");
const json = operator || beforeDashes.includes("--json");

export function buildProgram(): Command {
  const program = new Command("headwater")
    .version(VERSION)
    .description("Headwater: self-hosted event sources. User commands talk to a server's API; operator commands to the local node.")
    // Parse errors become a CommanderError that main() reports in the caller's format.
    .exitOverride()
    .configureOutput({
      outputError: () => {},
      // Help shown after an error (a group without its subcommand) only on the human path.
      writeErr: (text) => {
        if (!json) process.stderr.write(text);
      },
    })
    .showSuggestionAfterError(true);

  program.commandsGroup("User commands (a server's REST API; --json for scripts):");
  accountCommands(program);
  sourceCommands(program);
  listCommands(program);
  eventCommands(program);
  routingCommands(program);
  actionCommands(program);
  optionsCommands(program);
  workflowCommands(program);
  connectedAccountCommands(program);

  program.commandsGroup("Operator commands (this machine's data directory and log; print JSON):");
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
        announceNewDataDir(config, "always");
        const { startNode } = await operatorModules();
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

  program.commandsGroup("Other commands:");
  completionCommand(program);
  program.helpCommand("help [command]", "display help for a command");

  program.addHelpText(
    "after",
    `
Exit status: 0 ok; 1 failure (reported by the server, a failed run, or unexpected); 2 usage error;
3 not logged in or key refused; 4 not found; 5 cannot reach the server. Operator commands exit 1 or 2.

Profiles: \`headwater login\` saves the API URL and key in $XDG_CONFIG_HOME/headwater/config.json
(~/.config/headwater); --profile or HEADWATER_PROFILE picks one; --api-url/--api-key or
HEADWATER_API_URL/HEADWATER_API_KEY override it. Operator commands use HEADWATER_DATA_DIR (default ./data).`,
  );
  return program;
}

// `headwater events x -f | head -3`: a reader that goes away ends the command quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  const { exitCode, code } = error as { exitCode?: unknown; code?: unknown };
  // --help and --version end with status 0 through the same override.
  if (exitCode === 0 && typeof code === "string" && code.startsWith("commander.")) process.exit(0);
  // A group without its subcommand: its help is on stderr already, that says it all.
  if (code === "commander.help" && !json) process.exit(EXIT.usage);
  if (operator) failWith(error);
  exitWith(error, json, colorsFor(process.stderr).red);
}
