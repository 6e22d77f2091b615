import { expect } from "chai";
import { EventStoreClosedError } from "../../src/store/eventStoreClosedError.js";
import { GroupCommit, type AppendOutcome, type PendingAppend } from "../../src/store/groupCommit.js";
import { proposeEvents } from "../../src/store/proposedEvent.js";

const pending = (stream: string): PendingAppend => ({ stream, events: proposeEvents([{ type: "E", data: {} }]), expectedRevision: "any" });

/** A commit function that records the groups it is given and can be held open, like a slow fsync. */
function recordingCommit() {
  const groups: string[][] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const commit = async (group: readonly PendingAppend[]): Promise<AppendOutcome[]> => {
    groups.push(group.map((append) => append.stream));
    if (hold) await new Promise<void>((resolve) => (release = resolve));
    if (group.some((append) => append.stream === "explode")) throw new Error("disk full");
    return group.map((append, i) =>
      append.stream.startsWith("bad")
        ? { error: new Error(append.stream) }
        : { result: { nextExpectedRevision: i, position: groups.length * 100 + i } },
    );
  };
  return {
    groups,
    commit,
    holdNext: () => (hold = true),
    release: () => {
      hold = false;
      release?.();
    },
  };
}

describe("group commit", function () {
  it("commits the appends of one event-loop turn as one group, each with its own outcome", async function () {
    const recorder = recordingCommit();
    let notified = 0;
    const groupCommit = new GroupCommit(recorder.commit, () => notified++);
    const outcomes = await Promise.allSettled([
      groupCommit.append(pending("a")),
      groupCommit.append(pending("bad")),
      groupCommit.append(pending("c")),
    ]);
    expect(recorder.groups).to.deep.equal([["a", "bad", "c"]]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(["fulfilled", "rejected", "fulfilled"]);
    expect(notified).to.equal(1);
  });

  it("gathers the appends made while a commit is in progress into the next group", async function () {
    const recorder = recordingCommit();
    const groupCommit = new GroupCommit(recorder.commit, () => {});
    recorder.holdNext();
    const first = groupCommit.append(pending("first"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorder.groups).to.deep.equal([["first"]]);
    const waiting = [groupCommit.append(pending("x")), groupCommit.append(pending("y"))];
    await new Promise((resolve) => setTimeout(resolve, 10));
    const more = groupCommit.append(pending("z"));
    expect(recorder.groups).to.have.length(1);
    recorder.release();
    await Promise.all([first, ...waiting, more]);
    expect(recorder.groups).to.deep.equal([["first"], ["x", "y", "z"]]);
  });

  it("a failed transaction rejects its whole group and not the next one", async function () {
    const recorder = recordingCommit();
    const groupCommit = new GroupCommit(recorder.commit, () => {});
    const doomed = await Promise.allSettled([groupCommit.append(pending("ok")), groupCommit.append(pending("explode"))]);
    expect(doomed.map((o) => o.status)).to.deep.equal(["rejected", "rejected"]);
    expect(await groupCommit.append(pending("later"))).to.have.property("position");
  });

  it("close() commits what is queued, then refuses appends", async function () {
    const recorder = recordingCommit();
    const groupCommit = new GroupCommit(recorder.commit, () => {});
    const queued = groupCommit.append(pending("queued"));
    await groupCommit.close();
    await queued;
    expect(recorder.groups).to.deep.equal([["queued"]]);
    const refused = await groupCommit.append(pending("late")).catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(EventStoreClosedError);
  });
});
