// The two questions `headwater login` asks on a terminal: a line of text, and a secret that is not
// echoed. Both write to stderr, so stdout stays the command's output.
import readline from "node:readline/promises";
import { CliError, EXIT } from "../failure.js";

export const interactive = () => process.stdin.isTTY === true && process.stderr.isTTY === true;

export async function askLine(question: string, defaultValue?: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  const aborted = new Promise<never>((_, reject) => rl.once("SIGINT", () => reject(new CliError("usage", "login cancelled", EXIT.usage))));
  try {
    const answer = await Promise.race([rl.question(`${question}${defaultValue ? ` (${defaultValue})` : ""}: `), aborted]);
    return answer.trim() || defaultValue || "";
  } finally {
    rl.close();
  }
}

/** Reads a line in raw mode without echoing it (backspace works; Ctrl-C and Ctrl-D cancel). */
export function askSecret(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(`${question}: `);
  return new Promise((resolve, reject) => {
    let value = "";
    const done = (error?: Error) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      if (error) reject(error);
      else resolve(value.trim());
    };
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") return done();
        if (char === "\u0003" || char === "\u0004") return done(new CliError("usage", "login cancelled", EXIT.usage));
        if (char === "\u007f" || char === "\b") value = value.slice(0, -1);
        else if (char >= " ") value += char;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}
