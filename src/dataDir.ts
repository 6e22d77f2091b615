import fs from "node:fs";
import path from "node:path";

// A running server leaves its pid in the data directory, so operator commands that must not run
// beside it (rebuilding its read models) can refuse.
const pidFile = (dataDir: string) => path.join(dataDir, "headwater.pid");

export function writePidFile(dataDir: string): void {
  fs.writeFileSync(pidFile(dataDir), String(process.pid));
}

export function removePidFile(dataDir: string): void {
  fs.rmSync(pidFile(dataDir), { force: true });
}

/** The pid of a live server on this data directory, if any. */
export function runningServerPid(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile(dataDir), "utf8"));
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
