import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

// A data directory belongs to one node at a time. The lock is SQLite's exclusive lock on a small
// file, held by an open connection for the node's life: the kernel releases it when the process
// dies in any way (SIGKILL included), so a stale lock cannot outlive its holder. The pid file next
// to it only tells the operator who holds the lock; it is never what decides.
const LOCK_FILE = "node.lock";
const PID_FILE = "headwater.pid";

export class DataDirLockedError extends Error {
  override readonly name = "DataDirLockedError";
  constructor(
    readonly dataDir: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      `the data directory ${dataDir} is in use by another Headwater process${holderPid ? ` (pid ${holderPid})` : ""}: ` +
        "stop it first, or give this one its own HEADWATER_DATA_DIR",
    );
  }
}

export class DataDirLock {
  private constructor(
    private readonly dataDir: string,
    private readonly db: Database.Database,
  ) {}

  /** Takes the directory's lock or throws DataDirLockedError naming the holder. */
  static acquire(dataDir: string): DataDirLock {
    fs.mkdirSync(dataDir, { recursive: true });
    const db = new Database(path.join(dataDir, LOCK_FILE), { timeout: 0 });
    try {
      db.pragma("journal_mode = DELETE");
      // In exclusive mode the lock taken by the first write is kept until the connection closes.
      db.pragma("locking_mode = EXCLUSIVE");
      db.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL)");
      db.prepare("DELETE FROM holder").run();
      db.prepare("INSERT INTO holder (pid) VALUES (?)").run(process.pid);
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code === "SQLITE_BUSY") throw new DataDirLockedError(dataDir, readPid(dataDir));
      throw error;
    }
    fs.writeFileSync(path.join(dataDir, PID_FILE), String(process.pid));
    return new DataDirLock(dataDir, db);
  }

  release(): void {
    if (!this.db.open) return;
    if (readPid(this.dataDir) === process.pid) fs.rmSync(path.join(this.dataDir, PID_FILE), { force: true });
    this.db.close();
  }
}

/** Whether a live process holds the directory's lock (probed without keeping it). */
export function dataDirInUse(dataDir: string): boolean {
  if (!fs.existsSync(path.join(dataDir, LOCK_FILE))) return false;
  try {
    DataDirLock.acquire(dataDir).release();
    return false;
  } catch (error) {
    if (error instanceof DataDirLockedError) return true;
    throw error;
  }
}

function readPid(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, PID_FILE), "utf8"));
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
