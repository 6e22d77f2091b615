import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { openReadModels } from "./database.js";
import { ReadModelCheckpoints } from "./checkpoints.js";

describe("readModels/checkpoints", () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-checkpoints-"))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const fileSize = (file: string) => fs.statSync(file).size;
  const until = async (condition: () => boolean, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  /** A read-model file with a table `t`, its connection and its checkpoints (closed after `body`). */
  async function withReadModels(
    intervalMs: number,
    body: (file: string, db: Database.Database, checkpoints: ReadModelCheckpoints, insert: (text: string) => void) => Promise<void>,
  ): Promise<void> {
    const file = path.join(dir, "readmodels.db");
    const db = openReadModels(file);
    const checkpoints = new ReadModelCheckpoints(db, intervalMs);
    try {
      db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
      const statement = db.prepare("INSERT INTO t (body) VALUES (?)");
      await body(file, db, checkpoints, (text) => statement.run(text));
    } finally {
      await checkpoints.close();
      db.close();
    }
  }

  it("leaves the event loop's commits to the WAL, however many frames, and copies them into the file on its thread", () =>
    withReadModels(20, async (file, db, checkpoints, insert) => {
      const before = fileSize(file);
      // ~2,500 pages in 50 commits, far past the 1,000 frames at which SQLite checkpoints on the committing connection.
      for (let commit = 0; commit < 50; commit++) {
        db.transaction(() => {
          for (let row = 0; row < 50; row++) insert("x".repeat((200 * 1024) / 50));
        })();
      }
      expect(db.pragma("wal_autocheckpoint", { simple: true })).to.equal(0);
      expect(fileSize(file), "the event loop's connection copied frames into the file").to.equal(before);
      checkpoints.committed();
      await until(() => fileSize(file) > 8 * 1024 * 1024);
      expect(db.prepare("SELECT count(*) AS n FROM t").get()).to.deep.equal({ n: 2_500 });
    }));

  it("copies each later commit too, and nothing once closed; the connection then checkpoints by itself again", () =>
    withReadModels(50, async (file, db, checkpoints, insert) => {
      checkpoints.committed();
      await until(() => fileSize(file) > 0);
      let sizes = fileSize(file);
      for (let round = 0; round < 3; round++) {
        insert("y".repeat(1024 * 1024));
        // Right after the commit before it: it waits out the interval, then copies.
        checkpoints.committed();
        await until(() => fileSize(file) > sizes);
        sizes = fileSize(file);
      }
      // close() waits for a checkpoint still under way (the file may have been read mid-copy
      // above), so the file's size is final only once it returns.
      await checkpoints.close();
      const closed = fileSize(file);
      expect(closed).to.be.at.least(sizes);
      insert("z".repeat(1024 * 1024));
      checkpoints.committed();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(fileSize(file), "a checkpoint after close").to.equal(closed);
      // The connection checkpoints by itself again, as it did before.
      expect(db.pragma("wal_autocheckpoint", { simple: true })).to.equal(1000);
    }));
});
