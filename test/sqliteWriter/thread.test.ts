import { expect } from "chai";
import { WriterThread } from "../../src/sqliteWriter/thread.js";

type Request = { op: "echo"; value: unknown } | { op: "throw" } | { op: "die" };

describe("SQLite writer thread (the loop's side)", function () {
  const entry = new URL("./fixtures/echoThread.js", import.meta.url);

  it("answers requests in order and rebuilds a thrown error with its name, message and code", async () => {
    const thread = new WriterThread<Request>(entry, {});
    try {
      const answers = await Promise.all([1, 2, 3].map((value) => thread.request({ op: "echo", value: { value } })));
      expect(answers).to.deep.equal([{ value: 1 }, { value: 2 }, { value: 3 }]);
      const error = await thread.request({ op: "throw" }).then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(error).to.be.instanceOf(RangeError);
      expect(error?.message).to.equal("refused");
      expect(error?.code).to.equal("SQLITE_FULL");
    } finally {
      await thread.close();
    }
  });

  it("fails what waited on a thread that died, and starts a new thread for the next request", async () => {
    const thread = new WriterThread<Request>(entry, {});
    try {
      expect(await thread.request({ op: "echo", value: "before" })).to.equal("before");
      const died = await thread.request({ op: "die" }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(died?.message).to.match(/writer thread exited/);
      expect(await thread.request({ op: "echo", value: "after" })).to.equal("after");
    } finally {
      await thread.close();
    }
  });

  it("refuses requests once closed", async () => {
    const thread = new WriterThread<Request>(entry, {});
    await thread.close();
    const refused = await thread.request({ op: "echo", value: 1 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.message).to.match(/closed/);
  });
});
