// events and logs: what a source kept, oldest first, and with -f what comes next, live.
import { InvalidArgumentError, type Command } from "commander";
import type { EventSummary, Paged, RunLog } from "../client.js";
import { action, findSource, withConnection, type CommonOptions } from "../common.js";
import { follow } from "../follow.js";
import { compact, when, type Output } from "../output.js";

interface StreamOptions extends CommonOptions {
  readonly follow?: boolean;
  readonly limit: number;
  readonly org?: string;
}

function count(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) > 100)
    throw new InvalidArgumentError("a number from 0 to 100 (at most the last 100 are kept)");
  return Number(value);
}

/** `<time>  <id>  [channel]  summary  {event}` */
function printEvent(out: Output, item: EventSummary): void {
  const channel = item.metadata?.name ? ` ${out.c.cyan(`[${item.metadata.name}]`)}` : "";
  const summary = item.metadata?.summary ? ` ${out.c.bold(item.metadata.summary)}` : "";
  out.line(`${out.c.dim(when(item.indexed_at_ms, "ms"))} ${out.c.dim(item.id)}${channel}${summary} ${compact(item.event)}`);
}

/** A run: its header line, then its console lines indented. */
function printLog(out: Output, log: RunLog): void {
  const status = log.ok ? out.c.green("ok") : out.c.red("failed");
  out.line(
    `${out.c.dim(when(log.started_at_ms, "ms"))} ${out.c.dim(log.id)} ${log.trigger} ${status} ${out.c.dim(`${log.compute_ms} ms`)}`,
  );
  for (const line of log.lines ?? []) {
    const level =
      line.level === "error"
        ? out.c.red(line.level.padEnd(6))
        : line.level === "warn"
          ? out.c.yellow(line.level.padEnd(6))
          : out.c.dim(line.level.padEnd(6));
    out.line(`    ${level} ${line.message}`);
  }
  if (log.error) out.line(`    ${out.c.red(`${log.error.name}: ${log.error.message}`)}`);
}

const streamOptions = (command: Command) =>
  command
    .option("-f, --follow", "then stream new ones live until Ctrl-C (reconnects and resumes by itself)")
    .option("-n, --limit <n>", "how many of the most recent to print first (0 to 100)", count, 10)
    .option("--org <org_id>", "find the source among an organization's");

export function eventCommands(program: Command): void {
  withConnection(
    streamOptions(
      program
        .command("events <source>")
        .description("a source's most recent events, oldest first; -f follows new ones live (with --json: one JSON object per line)")
        .option("--channel <name>", 'one channel only ("" for the default channel, $errors)'),
    ),
  ).action(
    action(async ({ out, client }, nameOrId: string, options: StreamOptions & { channel?: string }) => {
      const api = client();
      const source = await findSource(api, nameOrId, options.org);
      const limit = options.limit;
      const kept =
        limit > 0
          ? (
              await api.get<Paged<EventSummary>>(`/sources/${source.id}/event_summaries`, {
                expand: "event",
                limit,
                ...(options.channel !== undefined ? { event_name: options.channel } : {}),
              })
            ).data.reverse()
          : [];
      const print = (item: EventSummary) => (out.json ? out.jsonLine(item) : printEvent(out, item));
      if (!options.follow) {
        if (out.json) return out.document(kept);
        if (kept.length === 0 && limit > 0) out.note(out.e.dim(`no events kept for ${source.name}`));
        for (const item of kept) printEvent(out, item);
        return;
      }
      for (const item of kept) print(item);
      // Resume after the newest event printed; with none printed, "0-0" replays whatever was kept
      // meanwhile (an id older than every kept event replays them all), so nothing falls in between.
      const lastEventId = kept.length > 0 ? kept[kept.length - 1].id : limit > 0 ? "0-0" : undefined;
      return follow(api, source.id, out, {
        ...(options.channel !== undefined ? { eventName: options.channel } : {}),
        ...(lastEventId !== undefined ? { lastEventId } : {}),
        onMessage: (_id, data) => print(data as EventSummary),
        // Said once the stream is open: what happens from then on is shown.
        onOpen: () => {
          if (!out.json) out.note(out.e.dim(`following ${source.name} (${source.id}), Ctrl-C to stop`));
        },
      });
    }),
  );

  withConnection(
    streamOptions(
      program
        .command("logs <source>")
        .description("a source's most recent runs with their console output, oldest first; -f follows new runs live"),
    ),
  ).action(
    action(async ({ out, client }, nameOrId: string, options: StreamOptions) => {
      const api = client();
      const source = await findSource(api, nameOrId, options.org);
      const limit = options.limit;
      const kept = limit > 0 ? (await api.get<Paged<RunLog>>(`/sources/${source.id}/logs`, { limit })).data.reverse() : [];
      const print = (log: RunLog) => (out.json ? out.jsonLine(log) : printLog(out, log));
      if (!options.follow) {
        if (out.json) return out.document(kept);
        if (kept.length === 0) out.note(out.e.dim(`no runs logged for ${source.name}`));
        for (const log of kept) printLog(out, log);
        return;
      }
      for (const log of kept) print(log);
      // $logs resumes by invocation id; an id it does not know replays every kept log (none were kept when we listed).
      const lastEventId = kept.length > 0 ? kept[kept.length - 1].id : limit > 0 ? "inv_none" : undefined;
      return follow(api, source.id, out, {
        eventName: "$logs",
        ...(lastEventId !== undefined ? { lastEventId } : {}),
        onMessage: (_id, data) => print((data as { event: RunLog }).event),
        onOpen: () => {
          if (!out.json) out.note(out.e.dim(`following the logs of ${source.name} (${source.id}), Ctrl-C to stop`));
        },
      });
    }),
  );
}
