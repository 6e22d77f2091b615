import { expect } from "chai";
import { applyDedupe, orderByTs, type Emit } from "./dedupe.js";
import { compareEventIds, nextEventIds, parseEventId, formatEventId } from "./eventIds.js";

const e = (id: string | number | undefined, ts?: number): Emit => ({
  event: { id },
  meta: { ...(id !== undefined ? { id } : {}), ...(ts !== undefined ? { ts } : {}) },
});
const ids = (emits: Emit[]) => emits.map((x) => x.meta.id);

describe("commands/emitters/dedupe", () => {
  it("without a strategy keeps everything", () => {
    expect(ids(applyDedupe(undefined, {}, [e(1), e(1)]).kept)).to.deep.equal([1, 1]);
  });

  describe("unique", () => {
    it("emits only ids not in the cache, across runs", () => {
      const first = applyDedupe("unique", {}, [e("a"), e("b"), e("a")]);
      expect(ids(first.kept)).to.deep.equal(["a", "b"]);
      const second = applyDedupe("unique", first.state, [e("b"), e("c")]);
      expect(ids(second.kept)).to.deep.equal(["c"]);
    });
    it("keeps the last 100 ids, oldest leave first", () => {
      let state = applyDedupe(
        "unique",
        {},
        Array.from({ length: 101 }, (_, i) => e(`id${i}`)),
      ).state;
      expect(state.unique).to.have.length(100);
      expect(state.unique![0]).to.equal("id1");
      const again = applyDedupe("unique", state, [e("id0"), e("id1")]);
      expect(ids(again.kept), "id0 left the cache, id1 is still in it").to.deep.equal(["id0"]);
      state = again.state;
      expect(state.unique![99]).to.equal("id0");
    });
    it("treats 1 and '1' as the same id", () => {
      const first = applyDedupe("unique", {}, [e(1)]);
      expect(applyDedupe("unique", first.state, [e("1")]).kept).to.have.length(0);
    });
  });

  describe("greatest", () => {
    it("emits only ids larger than the largest so far", () => {
      const first = applyDedupe("greatest", {}, [e(5), e(3), e(7)]);
      expect(ids(first.kept)).to.deep.equal([5, 7]);
      expect(first.state.greatest).to.equal(7);
      expect(ids(applyDedupe("greatest", first.state, [e(7), e("8"), e(6)]).kept)).to.deep.equal(["8"]);
    });
    it("compares integer ids past Number's precision exactly (64-bit snowflakes as text), and keeps the largest as text", () => {
      const first = applyDedupe("greatest", {}, [e("1790000000000000001"), e("1790000000000000000")]);
      expect(ids(first.kept)).to.deep.equal(["1790000000000000001"]);
      expect(first.state.greatest).to.equal("1790000000000000001");
      const next = applyDedupe("greatest", first.state, [e("1790000000000000001"), e("1790000000000000002"), e(12)]);
      expect(ids(next.kept)).to.deep.equal(["1790000000000000002"]);
      expect(next.state.greatest).to.equal("1790000000000000002");
      // Fractions and small integers compare with them by value; a state kept as a number reads as before.
      expect(ids(applyDedupe("greatest", { greatest: 7 }, [e(7.5), e("8"), e(8)]).kept)).to.deep.equal([7.5, "8"]);
      expect(applyDedupe("greatest", { greatest: 7 }, [e("9")]).state.greatest).to.equal(9);
    });
    it("refuses non-numeric ids with a warning", () => {
      const r = applyDedupe("greatest", {}, [e("abc"), e(2)]);
      expect(ids(r.kept)).to.deep.equal([2]);
      expect(r.warnings[0]).to.match(/numeric/);
    });
  });

  describe("last", () => {
    it("emits only events after the cached id", () => {
      const first = applyDedupe("last", {}, [e("a"), e("b"), e("c")]);
      expect(ids(first.kept), "no id matches: all are emitted").to.deep.equal(["a", "b", "c"]);
      expect(first.state.last).to.equal("c");
      const second = applyDedupe("last", first.state, [e("b"), e("c"), e("d"), e("e")]);
      expect(ids(second.kept)).to.deep.equal(["d", "e"]);
      expect(second.state.last).to.equal("e");
      const third = applyDedupe("last", second.state, [e("x"), e("y")]);
      expect(ids(third.kept), "no match again: all").to.deep.equal(["x", "y"]);
    });
    it("with ts, the cached event is the newest", () => {
      const ordered = orderByTs([e("new", 300), e("old", 100), e("mid", 200)], 0);
      expect(ids(ordered)).to.deep.equal(["old", "mid", "new"]);
      expect(applyDedupe("last", {}, ordered).state.last).to.equal("new");
    });
  });

  it("an emit without id under a strategy is emitted and reported", () => {
    const r = applyDedupe("unique", {}, [e(undefined), e("a")]);
    expect(r.kept).to.have.length(2);
    expect(r.warnings[0]).to.match(/without an id/);
  });

  it("orders by ts, stable, missing ts counting as the run start", () => {
    const ordered = orderByTs([e("a", 50), e("b"), e("c", 10), e("d", 50)], 20);
    expect(ids(ordered)).to.deep.equal(["c", "b", "a", "d"]);
  });
});

describe("commands/emitters/eventIds", () => {
  it("are strictly increasing even when the clock does not move or steps back", () => {
    const a = nextEventIds(undefined, 1000, 3);
    expect(a.map(formatEventId)).to.deep.equal(["1000-0", "1000-1", "1000-2"]);
    const b = nextEventIds(a[2], 1000, 1);
    expect(formatEventId(b[0])).to.equal("1000-3");
    const c = nextEventIds(b[0], 900, 1);
    expect(formatEventId(c[0])).to.equal("1000-4");
    const d = nextEventIds(c[0], 1001, 1);
    expect(formatEventId(d[0])).to.equal("1001-0");
    expect(compareEventIds(parseEventId("1000-10")!, parseEventId("1000-9")!)).to.be.greaterThan(0);
    expect(parseEventId("nope")).to.equal(undefined);
  });
});
