// What user commands print: human output (aligned tables, colours on a terminal) or, with --json,
// exactly one JSON document on stdout. Progress goes to stderr, and only on a terminal.
import pc from "picocolors";
import type { Colors } from "picocolors/types.js";

/** Colours when the stream is a terminal and NO_COLOR is not set (https://no-color.org). */
export function colorsFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): Colors {
  const enabled = stream.isTTY === true && !("NO_COLOR" in env && env.NO_COLOR !== "") && env.TERM !== "dumb";
  return pc.createColors(enabled);
}

const ANSI = /\u001b\[[0-9;]*m/g;
const visibleLength = (text: string) => text.replace(ANSI, "").length;
const pad = (text: string, width: number) => text + " ".repeat(Math.max(0, width - visibleLength(text)));

export interface Spinner {
  update(text: string): void;
  stop(): void;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export class Output {
  /** Colours for stdout. */
  readonly c: Colors;
  /** Colours for stderr. */
  readonly e: Colors;

  constructor(readonly json: boolean) {
    this.c = json ? pc.createColors(false) : colorsFor(process.stdout);
    this.e = colorsFor(process.stderr);
  }

  /** The one JSON document of a --json run. */
  document(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON value per line (a followed stream with --json). */
  jsonLine(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  }

  line(text = ""): void {
    process.stdout.write(`${text}\n`);
  }

  /** A remark for the person at the terminal (stderr, so it never mixes with the output). */
  note(text: string): void {
    process.stderr.write(`${text}\n`);
  }

  warn(text: string): void {
    process.stderr.write(`${this.e.yellow("warning:")} ${text}\n`);
  }

  /** Columns padded to their widest cell; a dim header row. */
  table(headers: readonly string[], rows: readonly (readonly string[])[]): void {
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => visibleLength(r[i] ?? ""))));
    const render = (cells: readonly string[]) =>
      cells
        .map((cell, i) => (i === cells.length - 1 ? cell : pad(cell, widths[i])))
        .join("  ")
        .trimEnd();
    this.line(this.c.dim(render(headers)));
    for (const row of rows) this.line(render(row));
  }

  /** Label/value lines with the values aligned. */
  fields(pairs: readonly (readonly [string, string | undefined])[]): void {
    const shown = pairs.filter((p): p is readonly [string, string] => p[1] !== undefined);
    const width = Math.max(...shown.map(([label]) => label.length));
    for (const [label, value] of shown) this.line(`${this.c.dim(pad(label, width))}  ${value}`);
  }

  /** A spinner on stderr while work takes time; nothing unless stderr is a terminal (and not with --json). */
  spinner(text: string): Spinner {
    if (this.json || process.stderr.isTTY !== true) return { update() {}, stop() {} };
    let current = text;
    let frame = 0;
    const draw = () => process.stderr.write(`\r\u001b[2K${this.e.cyan(FRAMES[frame++ % FRAMES.length])} ${current}`);
    draw();
    const timer = setInterval(draw, 80);
    return {
      update(next: string) {
        current = next;
      },
      stop() {
        clearInterval(timer);
        process.stderr.write("\r\u001b[2K");
      },
    };
  }
}

/** Epoch seconds or milliseconds as `2026-01-31 12:34:56` (UTC). */
export function when(epoch: number | undefined | null, unit: "s" | "ms" = "s"): string {
  if (epoch === undefined || epoch === null) return "";
  const date = new Date(unit === "s" ? epoch * 1000 : epoch);
  return Number.isNaN(date.getTime())
    ? String(epoch)
    : date
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, "");
}

/** A value on one line, for tables and event lines. */
export function compact(value: unknown): string {
  if (typeof value === "string") return value;
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text;
}
