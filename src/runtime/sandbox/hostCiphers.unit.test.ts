// GCM's counter increments only its low 32 bits (inc32) and wraps them alone, where AES-CTR carries
// into the rest of the block. The host builds GCM's keystream from AES-CTR, split at that wrap.
// A random IV reaches the wrap within a message once in billions, so it is pinned here against
// the definition: each counter block encrypted on its own (AES-ECB), the low 32 bits wrapped.
import { expect } from "chai";
import crypto from "node:crypto";
import { gcmCounterStream } from "./hostCiphers.js";

function referenceKeystream(key: Buffer, first: Buffer, blocks: number): Buffer {
  const ecb = crypto.createCipheriv(`aes-${key.length * 8}-ecb`, key, null).setAutoPadding(false);
  const out: Buffer[] = [];
  for (let i = 0; i < blocks; i++) {
    const counter = Buffer.from(first);
    counter.writeUInt32BE((first.readUInt32BE(12) + i) % 2 ** 32, 12);
    out.push(ecb.update(counter));
  }
  return Buffer.concat(out);
}

describe("hostCiphers: GCM keystream across the 32-bit counter wrap", () => {
  for (const bits of [128, 256]) {
    it(`aes-${bits}: the low 32 bits wrap without carrying, from any offset`, () => {
      const key = crypto.randomBytes(bits / 8);
      const first = Buffer.concat([crypto.randomBytes(12), Buffer.from([0xff, 0xff, 0xff, 0xfd])]);
      const keystream = referenceKeystream(key, first, 8);
      const zeros = new Uint8Array(8 * 16);
      expect(Buffer.from(gcmCounterStream(key, first, 0, zeros)).equals(keystream)).to.equal(true);
      // From within a block and across the wrap, as a later update continues.
      for (const at of [5, 16, 37, 47, 48, 63]) {
        const part = gcmCounterStream(key, first, at, zeros.subarray(at));
        expect(Buffer.from(part).equals(keystream.subarray(at)), `at ${at}`).to.equal(true);
      }
      // AES-CTR alone would carry into byte 11 and differ after the wrap.
      const ctr = crypto.createCipheriv(`aes-${bits}-ctr`, key, first).update(zeros);
      expect(ctr.subarray(0, 48).equals(keystream.subarray(0, 48))).to.equal(true);
      expect(ctr.subarray(48).equals(keystream.subarray(48))).to.equal(false);
    });
  }
});
