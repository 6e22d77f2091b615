import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openEventStore, UnsupportedEventStoreUrlError } from "../../src/store/open.js";

const postgresUrl = process.env.HEADWATER_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

describe("openEventStore(url)", function () {
  let dir: string;
  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), "headwater-open-"));
  });
  afterEach(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [label, urlFor] of [
    ["sqlite:<path>", (file: string) => `sqlite:${file}`],
    ["sqlite://<absolute path>", (file: string) => `sqlite://${file}`],
    ["a bare path", (file: string) => file],
  ] as const) {
    it(`opens SQLite for ${label}, creating the file`, async function () {
      const file = join(dir, "data", "events.db");
      const store = await openEventStore(urlFor(file));
      try {
        await store.append("s", [{ type: "A", data: { ok: true } }]);
        expect(existsSync(file)).to.equal(true);
        expect((await store.readStream("s"))[0].data).to.deep.equal({ ok: true });
      } finally {
        await store.close();
      }
    });
  }

  it("opens PostgreSQL for postgres:// and postgresql://, in the schema named by ?schema=", async function () {
    const schema = `hw_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      for (const url of [`${postgresUrl}?schema=${schema}`, `${postgresUrl.replace("postgres://", "postgresql://")}?schema=${schema}`]) {
        const store = await openEventStore(url);
        try {
          await store.append("s", [{ type: "A", data: {} }]);
        } finally {
          await store.close();
        }
      }
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM "${schema}".events`);
      expect(rows[0].n).to.equal(2);
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  });

  it("opens the KurrentDB client for esdb:// and kurrentdb:// (no server here: the first call fails to connect)", async function () {
    for (const url of ["esdb://127.0.0.1:1?tls=false", "kurrentdb://127.0.0.1:1?tls=false"]) {
      const store = await openEventStore(url);
      try {
        const error = await store.append("s", [{ type: "A", data: {} }]).then(
          () => undefined,
          (failure: unknown) => failure,
        );
        expect(String(error)).to.match(/UNAVAILABLE|Unavailable|ECONNREFUSED/);
      } finally {
        await store.close();
      }
    }
  });

  it("refuses a URL no adapter handles", async function () {
    for (const url of ["mysql://localhost/db", "http://example.com", "", "sqlite:"]) {
      const error = await openEventStore(url).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error, url).to.be.instanceOf(UnsupportedEventStoreUrlError);
    }
  });
});
