import pg from "pg";
import { CommitSignal, runAllSubscription } from "../allSubscription.js";
import type {
  AllSubscription,
  AppendOptions,
  AppendResult,
  EventStore,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
} from "../eventStore.js";
import { EventStoreClosedError } from "../eventStoreClosedError.js";
import { fromPostgres } from "../storeUnavailableError.js";
import { GroupCommit, type AppendOutcome, type PendingAppend } from "../groupCommit.js";
import type { GroupedWrites } from "../../groupedWrites.js";
import { groupedTruncations, type Truncation } from "../truncations.js";
import type { StoredEventId } from "../idempotency.js";
import { planCommit } from "./commitPlan.js";
import { layoutFor, migrate, type PostgresLayout } from "./schema.js";

export interface PostgresEventStoreOptions {
  /** postgres://user@host:port/database */
  readonly connectionString: string;
  /** Schema holding the tables; several stores can live in one database. Default "headwater". */
  readonly schema?: string;
  /** Pool size for reads and group commits. Default 5. */
  readonly maxConnections?: number;
  /** LISTEN/NOTIFY wakes subscriptions; this slow poll covers a dropped listener connection. */
  readonly safetyPollMs?: number;
}

interface EventRow {
  position: string;
  stream: string;
  revision: string;
  id: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  created: string;
}

const eventColumns = "position, stream, revision, id, type, data, metadata, created";

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    stream: row.stream,
    revision: Number(row.revision),
    position: Number(row.position),
    created: Number(row.created),
  };
}

function limitOf(maxCount: number | undefined): number | null {
  if (maxCount === undefined) return null; // LIMIT NULL: no limit
  if (!Number.isSafeInteger(maxCount) || maxCount < 0) throw new RangeError(`invalid maxCount ${maxCount}`);
  return maxCount;
}

export async function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<EventStore> {
  const layout = layoutFor(options.schema ?? "headwater");
  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 5 });
  // An idle pooled connection that dies is dropped by the pool; without a listener it would crash the process.
  pool.on("error", () => {});
  try {
    const client = await pool.connect();
    try {
      await migrate(client, layout);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  return new PostgresEventStore(pool, layout, options);
}

class PostgresEventStore implements EventStore {
  private readonly signal = new CommitSignal();
  private readonly groupCommit: GroupCommit;
  /** Truncations asked for together (a retention sweep's) go as one statement on one connection. */
  private readonly truncations: GroupedWrites<Truncation, void>;
  private readonly subscriptions = new Set<AllSubscription>();
  private readonly sql: ReturnType<typeof statementsFor>;
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private safetyPoll: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly layout: PostgresLayout,
    private readonly options: PostgresEventStoreOptions,
  ) {
    this.sql = statementsFor(layout);
    this.truncations = groupedTruncations((truncations) =>
      this.query(this.sql.truncateBefore, [truncations.map((t) => t.stream), truncations.map((t) => t.beforeRevision)]),
    );
    this.groupCommit = new GroupCommit(
      (group) => this.commitGroup(group),
      () => this.signal.notify(),
    );
  }

  /** A query on the pool; a server out of reach is `StoreUnavailableError`. */
  private async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw fromPostgres(error);
    }
  }

  append(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    return this.groupCommit.submit(stream, events, options);
  }

  /**
   * One transaction per group, four round trips whatever its size: lock, read state, write, commit.
   * Every append is decided in memory against state read under the lock, so a refused append
   * never reaches the database and needs no savepoint.
   */
  private async commitGroup(group: readonly PendingAppend[]): Promise<readonly AppendOutcome[]> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw fromPostgres(error);
    });
    let broken: Error | undefined;
    try {
      // Literal lock keys: a parameterless multi-statement query saves a round trip.
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${this.layout.appendLock[0]}, ${this.layout.appendLock[1]})`);
      const streams = [...new Set(group.map((append) => append.stream))];
      const givenIds = group.flatMap((append) => append.events.filter((event) => event.idGiven).map((event) => event.id));
      const { rows } = await client.query<{ head: string; streams: [string, number][]; ids: [string, string, number, number][] }>(
        this.sql.readState,
        [streams, givenIds],
      );
      const state = rows[0];
      const plan = planCommit(
        group,
        {
          head: Number(state.head),
          revisions: new Map(state.streams),
          ids: new Map(state.ids.map(([id, stream, revision, position]): [string, StoredEventId] => [id, { stream, revision, position }])),
        },
        Date.now(),
      );
      if (plan.events.position.length > 0) {
        const { events } = plan;
        await client.query(this.sql.write, [
          events.position,
          events.stream,
          events.revision,
          events.id,
          events.type,
          events.data,
          events.metadata,
          events.created,
          [...plan.streams.keys()],
          [...plan.streams.values()],
          plan.head,
          this.layout.channel,
        ]);
      }
      await client.query("COMMIT");
      return plan.outcomes;
    } catch (error) {
      broken = error as Error;
      await client.query("ROLLBACK").catch(() => {});
      throw fromPostgres(error);
    } finally {
      // A connection that failed mid-transaction is discarded rather than reused.
      client.release(broken);
    }
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const limit = limitOf(options?.maxCount);
    const backwards = options?.direction === "backwards";
    const from = options?.fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    const { rows } = await this.query<EventRow>(backwards ? this.sql.readStreamBackwards : this.sql.readStreamForwards, [
      stream,
      from,
      limit,
    ]);
    return rows.map(toRecordedEvent);
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllFrom(options?.fromPosition ?? 0, limitOf(options?.maxCount));
  }

  private async readAllFrom(fromPosition: number, limit: number | null): Promise<RecordedEvent[]> {
    const { rows } = await this.query<EventRow>(this.sql.readAll, [fromPosition, limit]);
    return rows.map(toRecordedEvent);
  }

  subscribeToAll(options: SubscribeToAllOptions): AllSubscription {
    this.assertOpen();
    const subscription = runAllSubscription(
      options,
      (fromPosition, maxCount) => this.readAllFrom(fromPosition, maxCount),
      this.signal,
      (stopped) => {
        this.subscriptions.delete(stopped);
        if (this.subscriptions.size === 0) void this.stopListening();
      },
    );
    this.subscriptions.add(subscription);
    this.startListening();
    return subscription;
  }

  /** Commits by other processes arrive as NOTIFY on a dedicated connection; the poll covers its outages. */
  private startListening(): void {
    if (this.safetyPoll === undefined) {
      this.safetyPoll = setInterval(() => {
        this.signal.notify();
        // Reconnect a listener lost to a network error or a server restart.
        if (this.listening === undefined && this.subscriptions.size > 0) this.startListening();
      }, this.options.safetyPollMs ?? 2000);
      this.safetyPoll.unref();
    }
    if (this.listening !== undefined || this.closed) return;
    const listener = new pg.Client({ connectionString: this.options.connectionString });
    const drop = () => {
      if (this.listener !== listener) return;
      this.listener = undefined;
      this.listening = undefined;
      void listener.end().catch(() => {});
    };
    this.listener = listener;
    listener.on("notification", () => this.signal.notify());
    listener.on("error", drop);
    this.listening = (async () => {
      try {
        await listener.connect();
        await listener.query(`LISTEN ${this.layout.channel}`);
        // Commits made while LISTEN was being set up could have been missed: look once more.
        this.signal.notify();
      } catch {
        drop();
      }
    })();
  }

  private async stopListening(): Promise<void> {
    clearInterval(this.safetyPoll);
    this.safetyPoll = undefined;
    const listener = this.listener;
    const listening = this.listening;
    this.listener = undefined;
    this.listening = undefined;
    if (listener !== undefined) {
      await listening;
      await listener.end().catch(() => {});
    }
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    const { rows } = await this.query<{ position: string }>(this.sql.headPosition);
    return Number(rows[0].position);
  }

  async streamRevision(stream: string): Promise<number | undefined> {
    this.assertOpen();
    const { rows } = await this.query<{ revision: string }>(this.sql.streamRevision, [stream]);
    return rows.length === 0 ? undefined : Number(rows[0].revision);
  }

  async streamRevisions(streams: readonly string[]): Promise<(number | undefined)[]> {
    this.assertOpen();
    if (streams.length === 0) return [];
    const { rows } = await this.query<{ stream: string; revision: string }>(this.sql.streamRevisions, [streams]);
    const found = new Map(rows.map((row) => [row.stream, Number(row.revision)]));
    return streams.map((stream) => found.get(stream));
  }

  async truncateBefore(stream: string, beforeRevision: number): Promise<void> {
    this.assertOpen();
    if (!Number.isSafeInteger(beforeRevision)) throw new RangeError(`invalid revision ${beforeRevision}`);
    if (beforeRevision <= 0) return;
    await this.truncations.add({ stream, beforeRevision });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.groupCommit.close();
    await this.truncations.close();
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    this.closed = true;
    await this.stopListening();
    await this.pool.end();
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }
}

function statementsFor({ schema }: PostgresLayout) {
  return {
    readState: `
      SELECT (SELECT position FROM ${schema}.head) AS head,
             (SELECT coalesce(json_agg(json_build_array(stream, revision)), '[]')
                FROM ${schema}.streams WHERE stream = ANY($1::text[])) AS streams,
             (SELECT coalesce(json_agg(json_build_array(id, stream, revision, position)), '[]')
                FROM ${schema}.events WHERE id = ANY($2::uuid[])) AS ids`,
    // pg_notify inside the transaction is delivered at commit, never before.
    write: `
      WITH inserted AS (
        INSERT INTO ${schema}.events (position, stream, revision, id, type, data, metadata, created)
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::uuid[], $5::text[], $6::json[], $7::json[], $8::bigint[])
      ), streams AS (
        INSERT INTO ${schema}.streams (stream, revision) SELECT * FROM unnest($9::text[], $10::bigint[])
        ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision
      ), head AS (
        UPDATE ${schema}.head SET position = $11
      )
      SELECT pg_notify($12, $11::text)`,
    readStreamForwards: `SELECT ${eventColumns} FROM ${schema}.events WHERE stream = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
    readStreamBackwards: `SELECT ${eventColumns} FROM ${schema}.events WHERE stream = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`,
    readAll: `SELECT ${eventColumns} FROM ${schema}.events WHERE position > $1 ORDER BY position LIMIT $2`,
    headPosition: `SELECT position FROM ${schema}.head`,
    streamRevision: `SELECT revision FROM ${schema}.streams WHERE stream = $1`,
    streamRevisions: `SELECT stream, revision FROM ${schema}.streams WHERE stream = ANY($1::text[])`,
    truncateBefore: `DELETE FROM ${schema}.events AS e USING unnest($1::text[], $2::bigint[]) AS t(stream, before)
      WHERE e.stream = t.stream AND e.revision < t.before`,
  };
}
