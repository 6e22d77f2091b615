import type { Database } from "better-sqlite3";
import type { RecordedEvent } from "../store/eventStore.js";

interface ProjectionBase {
  readonly name: string;
  /** Bump when the tables or the way rows are written change: the projection is then rebuilt on start. */
  readonly version: number;
  /** CREATE TABLE / CREATE INDEX statements, each idempotent (IF NOT EXISTS). */
  readonly schema: readonly string[];
  /** Tables dropped when the projection is rebuilt. */
  readonly tables: readonly string[];
  readonly handles: ReadonlySet<string>;
}

/** A read model that takes its events one at a time. */
export interface EventByEventProjection extends ProjectionBase {
  apply(db: Database, event: RecordedEvent): void;
  /** Called once after a batch was applied, in the same transaction: work that is cheaper done once per batch. */
  afterBatch?(db: Database): void;
}

/** The schema name a rebuild ATTACHes the SQLite log under, on the read-model connection. */
export const ATTACHED_LOG = "log";

/** A read model that takes a whole batch at once: for writes cheaper done over many events (multi-row inserts). */
export interface BatchProjection extends ProjectionBase {
  /** The batch's events of the handled types, in log order (possibly none). */
  applyBatch(db: Database, events: readonly RecordedEvent[]): void;
  /**
   * Handled types whose rows this projection can also write straight from the log, with SQL over
   * the `events` table of the log attached as ATTACHED_LOG. In a rebuild from a SQLite log, when
   * every projection handling a type can, that type's events come without their data
   * (`dataLeftInLog`), and `applyBatch` reads them there: a million events are never made into
   * strings and objects only to be written back as rows (docs/decisions.md).
   */
  readonly readsFromLog?: ReadonlySet<string>;
}

/**
 * A read model: the events it handles and the rows it writes, nothing else. It is applied inside
 * the projector's transaction, together with the checkpoint, so an event is never applied twice.
 */
export type Projection = EventByEventProjection | BatchProjection;
