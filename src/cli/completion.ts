// `headwater completion bash|zsh|fish`: a completion script written out from commander's command
// tree, so it always matches the commands of this version. It is static (no process is started
// on Tab): subcommands, then options; positional arguments fall back to file names.
import { Argument, type Command } from "commander";

interface Node {
  readonly path: string[];
  readonly command: Command;
}

function walk(command: Command, path: string[] = []): Node[] {
  const visible = command.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden);
  return [{ path, command }, ...visible.flatMap((c) => walk(c, [...path, c.name()]))];
}

const flagsOf = (command: Command) => [
  ...command.options.flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined)),
  "--help",
];
const children = (command: Command) => command.commands.map((c) => c.name()).filter((n) => n !== "help");

function bash(program: Command): string {
  const nodes = walk(program);
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, "_")}_completion`;
  const descend = nodes
    .filter((n) => n.path.length > 0)
    .map((n) => `      "${n.path.slice(0, -1).join(" ")}|${n.path[n.path.length - 1]}") path="${n.path.join(" ")}" ;;`)
    .join("\n");
  const words = nodes
    .map((n) => {
      const subcommands = children(n.command).join(" ");
      return `    "${n.path.join(" ")}") subcommands="${subcommands}"; flags="${flagsOf(n.command).join(" ")}" ;;`;
    })
    .join("\n");
  return `# ${name} completion for bash: eval "$(${name} completion bash)", or save it in ~/.local/share/bash-completion/completions/${name}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word i subcommands="" flags=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$path|$word" in
${descend}
    esac
  done
  case "$path" in
${words}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [[ -n "$subcommands" ]]; then
    COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
  else
    COMPREPLY=()
  fi
}
complete -o default -F ${fn} ${name}
`;
}

function zsh(program: Command): string {
  const name = program.name();
  return `#compdef ${name}
# ${name} completion for zsh: eval "$(${name} completion zsh)" in ~/.zshrc (after compinit)
autoload -U +X bashcompinit && bashcompinit
${bash(program)
  .split("\n")
  .filter((line) => !line.startsWith("# "))
  .join("\n")}`;
}

function fish(program: Command): string {
  const name = program.name();
  const quote = (text: string) => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  const lines = [
    `# ${name} completion for fish: ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
    `complete -c ${name} -f`,
  ];
  for (const node of walk(program)) {
    const inside = node.path.map((p) => `__fish_seen_subcommand_from ${p}`);
    const subs = children(node.command);
    const here = node.path.length === 0 ? ["__fish_use_subcommand"] : inside;
    const whenSubcommand = [
      ...here,
      ...(node.path.length > 0 && subs.length ? [`not __fish_seen_subcommand_from ${subs.join(" ")}`] : []),
    ].join("; and ");
    for (const sub of node.command.commands) {
      if (sub.name() === "help") continue;
      lines.push(`complete -c ${name} -n ${quote(whenSubcommand)} -a ${sub.name()} -d ${quote(sub.description().split("\n")[0])}`);
    }
    const whenOption = (node.path.length === 0 ? [] : inside).join("; and ");
    for (const option of node.command.options) {
      const parts = [`complete -c ${name}`];
      if (whenOption) parts.push(`-n ${quote(whenOption)}`);
      if (option.short) parts.push(`-s ${option.short.replace(/^-/, "")}`);
      if (option.long) parts.push(`-l ${option.long.replace(/^--/, "")}`);
      if (option.required || option.optional) parts.push("-r");
      parts.push(`-d ${quote(option.description)}`);
      lines.push(parts.join(" "));
    }
    // Positional arguments that name files (deploy, --code): let fish offer files there.
    const args = (node.command as Command & { registeredArguments?: readonly Argument[] }).registeredArguments ?? [];
    if (node.path.length > 0 && args.some((a) => a.name() === "target")) lines.push(`complete -c ${name} -n ${quote(whenOption)} -F`);
  }
  return `${lines.join("\n")}\n`;
}

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

export function completionScript(program: Command, shell: Shell): string {
  return shell === "bash" ? bash(program) : shell === "zsh" ? zsh(program) : fish(program);
}

export function completionCommand(program: Command): void {
  program
    .command("completion")
    .description("print a shell completion script (bash, zsh or fish)")
    .addArgument(new Argument("<shell>", "bash, zsh or fish").choices(SHELLS))
    .addHelpText(
      "after",
      '\nbash: eval "$(headwater completion bash)"  zsh: eval "$(headwater completion zsh)"\nfish: headwater completion fish > ~/.config/fish/completions/headwater.fish',
    )
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
}
