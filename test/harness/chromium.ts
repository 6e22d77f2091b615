import { spawnSync } from "node:child_process";
import fs from "node:fs";

// Headless Chromium for the dashboard tests: Debian's `chromium` package, installed here with
// apt-get when it is missing (the test machines run as root). Returns the browser's path, or the
// reason it cannot be had, which the tests print loudly when they skip.

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];

const found = () => CANDIDATES.find((file) => fs.existsSync(file));

export function ensureChromium(): { path: string } | { missing: string } {
  const existing = found();
  if (existing) return { path: existing };
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    return { missing: "chromium is not installed and installing it needs root (apt-get install chromium)" };
  }
  if (spawnSync("sh", ["-c", "command -v apt-get"]).status !== 0)
    return { missing: "chromium is not installed and there is no apt-get here" };
  process.stderr.write("dashboard tests: installing Debian's chromium with apt-get (a minute or two, once per machine)…\n");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update"], { stdio: ["ignore", "inherit", "inherit"], env, timeout: 300_000 });
  const install = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
    stdio: ["ignore", "inherit", "inherit"],
    env,
    timeout: 600_000,
  });
  const installed = found();
  if (installed) return { path: installed };
  return { missing: `apt-get could not install chromium (update exit ${update.status}, install exit ${install.status})` };
}
