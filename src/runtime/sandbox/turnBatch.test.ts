import { expect } from "chai";
import { ProtocolError } from "./protocol.js";
import { messagesOf, TurnBatchedSender, type ManyMessages } from "./turnBatch.js";

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("TurnBatchedSender (the runner IPC's writes)", () => {
  it("writes the messages of one turn once, in order, as a many; a turn's only message as itself", async () => {
    const writes: unknown[] = [];
    const sender = new TurnBatchedSender<{ type: string; n: number }>((message) => writes.push(message));
    sender.send({ type: "invoke", n: 1 });
    sender.send({ type: "invoke", n: 2 });
    queueMicrotask(() => sender.send({ type: "ping", n: 3 }));
    expect(writes, "nothing written before the turn ends").to.deep.equal([]);
    await turn();
    expect(writes).to.deep.equal([
      {
        type: "many",
        messages: [
          { type: "invoke", n: 1 },
          { type: "invoke", n: 2 },
          { type: "ping", n: 3 },
        ],
      },
    ]);
    sender.send({ type: "invoke", n: 4 });
    await turn();
    expect(writes[1]).to.deep.equal({ type: "invoke", n: 4 });
    await turn();
    expect(writes, "an empty turn writes nothing").to.have.length(2);
  });

  it("flush() writes what is queued at once, and the turn's end then has nothing left to write", async () => {
    const writes: unknown[] = [];
    const sender = new TurnBatchedSender<string>((message) => writes.push(message));
    sender.send("a");
    sender.flush();
    expect(writes).to.deep.equal(["a"]);
    await turn();
    expect(writes).to.deep.equal(["a"]);
  });

  it("the receiver takes a write apart: one message, or a many's messages in order; a malformed many is a ProtocolError", () => {
    const many: ManyMessages<{ type: string }> = { type: "many", messages: [{ type: "a" }, { type: "b" }] };
    expect(messagesOf(many)).to.deep.equal([{ type: "a" }, { type: "b" }]);
    expect(messagesOf({ type: "result", id: 1 })).to.deep.equal([{ type: "result", id: 1 }]);
    expect(messagesOf("nonsense"), "a malformed single message is left to the message's own checks").to.deep.equal(["nonsense"]);
    expect(() => messagesOf({ type: "many", messages: "x" })).to.throw(ProtocolError, /many/);
    expect(() => messagesOf({ type: "many" })).to.throw(ProtocolError, /many/);
  });
});
