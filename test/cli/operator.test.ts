import { expect } from "chai";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer } from "../harness/server.js";
import { runCli } from "./cliHarness.js";

// Operator commands: JSON for every failure (usage errors included), admin user list, the data
// directory they use, and the package's bin.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const baseEnv = () => ({ PATH: process.env.PATH ?? "", HOME: os.tmpdir() });
const freshDir = (label: string) => fs.mkdtempSync(path.join(os.tmpdir(), `hw-${label}-`));

/** stderr is exactly one JSON error document. */
const jsonError = (stderr: string) => {
  const lines = stderr.trim().split("\n");
  expect(lines, stderr).to.have.length(1);
  return JSON.parse(lines[0]);
};

describe("operator CLI", function () {
  this.timeout(60_000);

  describe("admin user list (against a running server's log)", () => {
    const server = new TestServer();
    before(() => server.start());
    after(() => server.stop());

    it("lists every user with id, username, email, plan, operator and created_at, while the server holds the data directory", () => {
      const ann = server.cli("admin", "user", "create", "--username", "list-ann", "--email", "ann@example.com");
      const bob = server.cli("admin", "user", "create", "--username", "list-bob", "--email", "bob@example.com", "--plan", "paid");
      expect(ann.status, ann.stderr).to.equal(0);
      expect(bob.status, bob.stderr).to.equal(0);
      const listed = server.cli("admin", "user", "list");
      expect(listed.status, listed.stderr).to.equal(0);
      expect(listed.json.map((u: any) => u.username)).to.include.members(["operator", "list-ann", "list-bob"]);
      const operator = listed.json.find((u: any) => u.username === "operator");
      expect(operator).to.include({ plan: "paid", operator: true, email: "operator@localhost" });
      expect(Object.keys(operator)).to.deep.equal(["id", "username", "email", "plan", "operator", "created_at"]);
      expect(listed.json.find((u: any) => u.username === "list-ann")).to.include({ id: ann.json.id, plan: "free", operator: false });
      server.cli("admin", "user", "set-plan", ann.json.id, "--plan", "paid");
      expect(server.cli("admin", "user", "list").json.find((u: any) => u.username === "list-ann").plan).to.equal("paid");
    });

    it("a bad --plan is a usage error (exit 2, code usage) and writes nothing", () => {
      const r = server.cli("admin", "user", "create", "--username", "gold", "--email", "gold@example.com", "--plan", "gold");
      expect(r.status).to.equal(2);
      expect(jsonError(r.stderr)).to.deep.equal({ error: '--plan must be free or paid, got "gold"', code: "usage" });
      expect(server.cli("admin", "user", "list").json.map((u: any) => u.username)).to.not.include("gold");
      const setPlan = server.cli("admin", "user", "set-plan", "u_whoever0000", "--plan", "platinum");
      expect(setPlan.status).to.equal(2);
      expect(jsonError(setPlan.stderr).code).to.equal("usage");
    });
  });

  describe("failures are one JSON document on stderr, never a stack trace", () => {
    const dataDir = freshDir("operr");
    const env = () => ({ ...baseEnv(), HEADWATER_DATA_DIR: dataDir });

    it("usage errors: unknown options, missing options and arguments, bad roles, a group without its subcommand (exit 2)", () => {
      const cases: [string[], RegExp][] = [
        [
          ["start", "--roles", "foo"],
          /^roles must be a comma-separated subset of api,runner,dispatcher,scheduler,projector; unknown: foo$/,
        ],
        [["start", "--bogus"], /^unknown option '--bogus'$/],
        [["admin", "user", "create", "--email", "x@example.com"], /^required option '--username <username>' not specified$/],
        [["audit"], /^missing required argument 'resourceId'$/],
        [["admin"], /^a subcommand is required/],
        [["admin", "key", "frobnicate"], /^unknown command 'frobnicate'/],
        [["audit", "not-an-id"], /is not a resource id/],
      ];
      for (const [args, message] of cases) {
        const r = runCli(args, env());
        expect(r.status, `${args.join(" ")}: ${r.stderr}`).to.equal(2);
        const error = jsonError(r.stderr);
        expect(error.code, args.join(" ")).to.equal("usage");
        expect(error.error, args.join(" ")).to.match(message);
        expect(r.stdout, args.join(" ")).to.equal("");
      }
    });

    it("an invalid configuration is JSON with code invalid_config (exit 1), for every operator command", () => {
      for (const args of [["audit", "u_abc"], ["admin", "user", "list"], ["start"], ["projections", "rebuild"]]) {
        const r = runCli(args, { ...env(), PORT: "abc" });
        expect(r.status, args.join(" ")).to.equal(1);
        const error = jsonError(r.stderr);
        expect(error).to.deep.equal({
          error: 'invalid configuration: PORT must be a port number (0 picks a free one), got "abc"',
          code: "invalid_config",
        });
      }
    });

    it("--json also makes the user commands' usage errors JSON, and the root's", () => {
      const r = runCli(["--nope", "--json"], env());
      expect(r.status).to.equal(2);
      expect(jsonError(r.stderr)).to.deep.equal({ error: "unknown option '--nope'", code: "usage" });
    });
  });

  describe("the data directory", () => {
    it("says on stderr when a command creates a new one (./data by default), and is quiet once it exists", () => {
      const cwd = freshDir("cwd");
      const first = runCli(["admin", "user", "list"], baseEnv(), { cwd });
      expect(first.status, first.stderr).to.equal(0);
      expect(first.json).to.deep.equal([]);
      expect(first.stderr).to.equal(
        `headwater: creating a new data directory ${fs.realpathSync(cwd)}/data (set HEADWATER_DATA_DIR to use another one)\n`,
      );
      expect(fs.existsSync(path.join(cwd, "data", "events.db"))).to.equal(true);
      const second = runCli(["admin", "user", "list"], baseEnv(), { cwd });
      expect(second.stderr).to.equal("");
      const elsewhere = freshDir("elsewhere");
      const named = runCli(["projections", "rebuild"], { ...baseEnv(), HEADWATER_DATA_DIR: path.join(elsewhere, "node-a") }, { cwd });
      expect(named.status, named.stderr).to.equal(0);
      expect(named.stderr).to.include(`creating a new data directory ${path.join(elsewhere, "node-a")}`);
    });
  });

  describe("the package's bin", () => {
    it("runs the CLI, and says how to build it when dist/ is missing", () => {
      const bin = path.join(repoRoot, "bin", "headwater.js");
      const version = spawnSync(process.execPath, ["--no-node-snapshot", bin, "--version"], { encoding: "utf8", env: baseEnv() });
      expect(version.status, version.stderr).to.equal(0);
      expect(version.stdout.trim()).to.match(/^\d+\.\d+\.\d+$/);
      const bare = freshDir("bare");
      fs.mkdirSync(path.join(bare, "bin"));
      fs.copyFileSync(bin, path.join(bare, "bin", "headwater.js"));
      const missing = spawnSync(process.execPath, [path.join(bare, "bin", "headwater.js"), "--help"], { encoding: "utf8", env: baseEnv() });
      expect(missing.status).to.equal(1);
      expect(missing.stderr).to.match(/^headwater: the compiled CLI \(dist\/\) is missing\. Build it with `npm run build`/);
    });

    it("`npx headwater --help` works in the checkout once installed (what a fresh clone gets after npm install)", () => {
      const npx = spawnSync("npx", ["--no-install", "headwater", "--help"], {
        cwd: repoRoot,
        encoding: "utf8",
        env: baseEnv(),
        timeout: 60_000,
      });
      expect(npx.status, npx.stderr).to.equal(0);
      expect(npx.stdout)
        .to.match(/^Usage: headwater/)
        .and.include("deploy")
        .and.include("start");
    });
  });
});
