import { expect } from "chai";
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toDomainError } from "./errors.js";

describe("toDomainError: storage failures a client can retry", () => {
  it("a SQLite file locked past the busy timeout (a real SQLITE_BUSY) is 503 unavailable, retry after 1 s", () => {
    const dir = mkdtempSync(join(tmpdir(), "hw-errors-"));
    const holder = new Database(join(dir, "f.db"));
    const writer = new Database(join(dir, "f.db"), { timeout: 0 });
    try {
      holder.exec("CREATE TABLE t (x)");
      holder.exec("BEGIN IMMEDIATE");
      let thrown: unknown;
      try {
        writer.exec("INSERT INTO t VALUES (1)");
      } catch (error) {
        thrown = error;
      }
      expect((thrown as { code?: string }).code).to.equal("SQLITE_BUSY");
      const mapped = toDomainError(thrown);
      expect(mapped.code).to.equal("unavailable");
      expect(mapped.retryAfterSeconds).to.equal(1);
    } finally {
      holder.close();
      writer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a full disk (SQLITE_FULL) is 503 unavailable with a longer wait; other errors stay internal", () => {
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    expect(toDomainError(full)).to.include({ code: "unavailable", retryAfterSeconds: 30 });
    const other = Object.assign(new Error("UNIQUE constraint failed: sources.id"), { code: "SQLITE_CONSTRAINT_PRIMARYKEY" });
    expect(toDomainError(other)).to.include({ code: "internal", message: "internal error" });
  });

  it("an I/O error, a read-only or vanished file (SQLITE_IOERR_*, READONLY, CANTOPEN) is 503 unavailable, not internal", () => {
    for (const code of [
      "SQLITE_IOERR",
      "SQLITE_IOERR_WRITE",
      "SQLITE_IOERR_FSYNC",
      "SQLITE_READONLY",
      "SQLITE_READONLY_DBMOVED",
      "SQLITE_CANTOPEN",
    ]) {
      const error = Object.assign(new Error("disk I/O error"), { code });
      expect(toDomainError(error), code).to.include({ code: "unavailable", retryAfterSeconds: 30 });
    }
  });
});

describe("toDomainError: the router's method errors", () => {
  it("a 405 is method_not_allowed and a 501 (a method with no route at all) is not_implemented, not internal", () => {
    const thrown = (status: number, message: string) => Object.assign(new Error(message), { status, expose: true });
    expect(toDomainError(thrown(405, "Method Not Allowed"))).to.include({ code: "method_not_allowed" });
    expect(toDomainError(thrown(501, "Not Implemented"))).to.include({ code: "not_implemented", message: "Not Implemented" });
    expect(toDomainError(thrown(500, "boom"))).to.include({ code: "internal", message: "internal error" });
    expect(toDomainError(thrown(502, "bad gateway"))).to.include({ code: "internal" });
  });
});
