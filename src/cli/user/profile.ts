// Where the user CLI finds its server and key: flags, then HEADWATER_API_URL / HEADWATER_API_KEY,
// then a named profile of the config file ($XDG_CONFIG_HOME/headwater/config.json, mode 0600).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError, EXIT, usage } from "../failure.js";

export interface Profile {
  /** The server's base address, without /v1. */
  readonly api_url: string;
  readonly api_key: string;
  /** Who the key belonged to when it was saved (shown by logout and whoami). */
  readonly user_id?: string;
  readonly username?: string;
}

interface ConfigFile {
  profiles: Record<string, Profile>;
}

/** What every user command accepts to say where and as whom. */
export interface ConnectionOptions {
  readonly apiUrl?: string;
  readonly apiKey?: string;
  readonly profile?: string;
}

export interface Connection {
  /** Base address without /v1 (the SSE streams live there). */
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly profile: string;
}

export const DEFAULT_PROFILE = "default";

export function configFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), ".config");
  return path.join(base, "headwater", "config.json");
}

export function profileName(options: ConnectionOptions, env: NodeJS.ProcessEnv = process.env): string {
  const name = options.profile ?? env.HEADWATER_PROFILE ?? DEFAULT_PROFILE;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw usage(`a profile name is letters, digits, ".", "_" or "-", got "${name}"`);
  return name;
}

/** `http://host:8080`, `http://host:8080/` and `http://host:8080/v1` all name the same server. */
export function normalizeApiUrl(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw.trim());
  } catch {
    throw usage(`the API URL must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw usage(`the API URL must be an http(s) URL, got "${raw}"`);
  if (parsed.search || parsed.hash) throw usage(`the API URL takes no query or fragment, got "${raw}"`);
  return parsed.href.replace(/\/+$/, "").replace(/\/v1$/, "");
}

function readConfig(file: string): ConfigFile {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { profiles: {} };
    throw new CliError("invalid_config", `cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { profiles: typeof parsed.profiles === "object" && parsed.profiles !== null ? parsed.profiles : {} };
  } catch {
    throw new CliError("invalid_config", `${file} is not valid JSON: fix it or delete it and log in again`);
  }
}

/** Written to a private temporary file, then renamed over the old one: never readable by others, never half written. */
function writeConfig(file: string, config: ConfigFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(temporary, 0o600);
  fs.renameSync(temporary, file);
}

export function readProfile(name: string, file = configFile()): Profile | undefined {
  const profiles = readConfig(file).profiles;
  return Object.prototype.hasOwnProperty.call(profiles, name) ? profiles[name] : undefined;
}

export function saveProfile(name: string, profile: Profile, file = configFile()): void {
  const config = readConfig(file);
  // Defined, not assigned: assigning to profiles["__proto__"] (a valid name) would set the object's
  // prototype and save nothing while login said it had.
  Object.defineProperty(config.profiles, name, { value: profile, enumerable: true, writable: true, configurable: true });
  writeConfig(file, config);
}

/** Whether there was such a profile. */
export function removeProfile(name: string, file = configFile()): boolean {
  const config = readConfig(file);
  if (!Object.prototype.hasOwnProperty.call(config.profiles, name)) return false;
  delete config.profiles[name];
  writeConfig(file, config);
  return true;
}

/** Flags, then the environment, then the profile, field by field. */
export function resolveConnection(options: ConnectionOptions, env: NodeJS.ProcessEnv = process.env): Connection {
  const name = profileName(options, env);
  const saved = readProfile(name);
  const apiUrl = options.apiUrl ?? env.HEADWATER_API_URL ?? saved?.api_url;
  const apiKey = options.apiKey ?? env.HEADWATER_API_KEY ?? saved?.api_key;
  if (apiUrl === undefined || apiKey === undefined || apiKey === "") {
    const missing = apiUrl === undefined ? "API URL" : "API key";
    throw new CliError(
      "unauthorized",
      `no ${missing}${saved || options.profile ? ` in profile "${name}"` : ""}: run \`headwater login\`` +
        " (or pass --api-url and --api-key, or set HEADWATER_API_URL and HEADWATER_API_KEY)",
      EXIT.auth,
    );
  }
  return { apiUrl: normalizeApiUrl(apiUrl), apiKey, profile: name };
}
