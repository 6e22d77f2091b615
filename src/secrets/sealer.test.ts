import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadSealer, Sealer } from "./sealer.js";

describe("secrets/sealer", () => {
  it("round-trips values and never stores them in clear", () => {
    const sealer = new Sealer(Buffer.alloc(32, 7));
    const sealed = sealer.seal({ token: "s3cr3t-value" });
    expect(JSON.stringify(sealed)).to.not.include("s3cr3t");
    expect(sealer.open(sealed)).to.deep.equal({ token: "s3cr3t-value" });
  });
  it("detects tampering and wrong keys", () => {
    const sealed = new Sealer(Buffer.alloc(32, 1)).seal("x");
    expect(() => new Sealer(Buffer.alloc(32, 2)).open(sealed)).to.throw();
    const parts = sealed.$sealed.split(".");
    parts[2] = Buffer.from("tampered").toString("base64url");
    expect(() => new Sealer(Buffer.alloc(32, 1)).open({ $sealed: parts.join(".") })).to.throw();
  });
  it("generates a key file once, private to the owner, and reuses it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sealer-"));
    const sealed = loadSealer(undefined, dir).seal(42);
    expect(fs.statSync(path.join(dir, "secret.key")).mode & 0o777).to.equal(0o600);
    expect(loadSealer(undefined, dir).open(sealed)).to.equal(42);
  });
  it("takes a configured hex key", () => {
    const hex = "ab".repeat(32);
    expect(loadSealer(hex, "/nonexistent").open(loadSealer(hex, "/nonexistent").seal("v"))).to.equal("v");
    expect(() => loadSealer("short", "/nonexistent")).to.throw(/32 bytes/);
  });
});
