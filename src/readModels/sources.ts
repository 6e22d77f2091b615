import type { Database } from "better-sqlite3";
import type { SourceRow } from "../../projections/sources.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";
import { PER_SOURCE_MEMO_ENTRIES, ReadModelMemo, type AppliedEvents } from "./memo.js";
import { sourcesProjection } from "../../projections/sources.js";
import type { NormalizedProp } from "../runtime/types.js";

/** A deployed source as the application sees it. */
export interface Source {
  readonly id: string;
  readonly ownerId: string;
  /** Who deployed it: its runs are billed to them. */
  readonly creatorId: string;
  readonly componentId: string;
  readonly name: string;
  readonly nameSlug: string;
  readonly endpointId: string;
  /** As stored: secrets sealed. */
  readonly configuredProps: Record<string, unknown>;
  /** The props its component's additionalProps() added at its deploy or last update (none for most). */
  readonly additionalProps: readonly NormalizedProp[];
  readonly active: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Log position of its creation: the listing's keyset. */
  readonly seq: number;
}

const toSource = (row: SourceRow): Source => ({
  id: row.id,
  ownerId: row.owner_id,
  creatorId: row.creator_id,
  componentId: row.component_id,
  name: row.name,
  nameSlug: row.name_slug,
  endpointId: row.endpoint_id,
  configuredProps: JSON.parse(row.configured_props) as Record<string, unknown>,
  additionalProps: row.additional_props === null ? [] : (JSON.parse(row.additional_props) as NormalizedProp[]),
  active: row.active === 1,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  seq: row.seq,
});

/** Queries over the sources read model (projections/sources.ts). */
export class SourcesReadModel {
  readonly #byId: ReadModelMemo<Source>;
  readonly #byEndpoint: ReadModelMemo<Source>;

  /** With `changes` (the node's projector), lookups by id and endpoint are memoized until a source changes. */
  constructor(
    private readonly db: Database,
    changes?: AppliedEvents,
  ) {
    this.#byId = new ReadModelMemo(changes, sourcesProjection.handles, PER_SOURCE_MEMO_ENTRIES);
    this.#byEndpoint = new ReadModelMemo(changes, sourcesProjection.handles, PER_SOURCE_MEMO_ENTRIES);
  }

  /** Frozen when memoized. */
  source(id: string): Source | undefined {
    return this.#byId.get(id, () => {
      const row = statement<[string], SourceRow>(this.db, "SELECT * FROM sources WHERE id = ?").get(id);
      return row && toSource(row);
    });
  }

  /** Frozen when memoized. */
  byEndpoint(endpointId: string): Source | undefined {
    return this.#byEndpoint.get(endpointId, () => {
      const row = statement<[string], SourceRow>(this.db, "SELECT * FROM sources WHERE endpoint_id = ?").get(endpointId);
      return row && toSource(row);
    });
  }

  sourcesOf(ownerId: string, page: PageRequest): Page<Source> {
    const rows = keysetPage<SourceRow>(
      this.db,
      {
        from: "sources",
        where: "owner_id = ?",
        params: [ownerId],
        order: "asc",
        total: countOf(this.db, "source_counts", ownerId),
      },
      page,
    );
    return mapPage(rows, toSource);
  }

  /** Every active source (the scheduler picks those with a timer). */
  active(): Source[] {
    return statement<[], SourceRow>(this.db, "SELECT * FROM sources WHERE active = 1").all().map(toSource);
  }

  slugTaken(ownerId: string, slug: string): boolean {
    return statement(this.db, "SELECT 1 FROM sources WHERE owner_id = ? AND name_slug = ?").get(ownerId, slug) !== undefined;
  }
}
