// Ciphers, key derivation and key generation in the sandbox's crypto, against Node's own crypto:
// what a component encrypts Node decrypts on the host and the other way round, update by update;
// derived keys equal Node's; generated keys are used by Node to check what the component signed.
// Real isolates; cryptr and @wecom/crypto from the registry.
import { expect } from "chai";
import crypto from "node:crypto";
import { startRuntime, invocation, prepareCode } from "./support.js";
import type { Runtime } from "../../src/runtime/index.js";

/** The same cut of the data into updates in the sandbox and on the host: the outputs must match update by update. */
const CUTS = [1, 15, 17, 32, 5, 64, 3];
function pieces(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < data.length; i++) {
    const n = CUTS[i % CUTS.length];
    out.push(data.subarray(at, at + n));
    at += n;
  }
  return out;
}

type Case = { name: string; key: string; iv: string | null; aad?: string; tagLength?: number };

const SUITE: Case[] = [];
for (const bits of [128, 192, 256]) {
  const key = crypto.randomBytes(bits / 8).toString("hex");
  SUITE.push({ name: `aes-${bits}-cbc`, key, iv: crypto.randomBytes(16).toString("hex") });
  SUITE.push({ name: `aes-${bits}-ecb`, key, iv: null });
  // A counter near its 128-bit wrap: the host's counter arithmetic carries across bytes.
  SUITE.push({ name: `aes-${bits}-ctr`, key, iv: "00000000000000fffffffffffffffffe" });
  SUITE.push({ name: `aes-${bits}-gcm`, key, iv: crypto.randomBytes(12).toString("hex"), aad: "header" });
}
// GCM with IVs of other lengths (the first counter comes from GHASH), a shorter tag, and chacha20-poly1305.
SUITE.push({ name: "aes-256-gcm", key: crypto.randomBytes(32).toString("hex"), iv: crypto.randomBytes(16).toString("hex"), tagLength: 12 });
SUITE.push({ name: "id-aes128-GCM", key: crypto.randomBytes(16).toString("hex"), iv: crypto.randomBytes(7).toString("hex") });
SUITE.push({
  name: "chacha20-poly1305",
  key: crypto.randomBytes(32).toString("hex"),
  iv: crypto.randomBytes(12).toString("hex"),
  aad: "aad",
});
SUITE.push({
  name: "chacha20-poly1305",
  key: crypto.randomBytes(32).toString("hex"),
  iv: crypto.randomBytes(12).toString("hex"),
  tagLength: 8,
});
SUITE.push({ name: "des-ede3-cbc", key: crypto.randomBytes(24).toString("hex"), iv: crypto.randomBytes(8).toString("hex") });
// The other 16-byte block ciphers' counter modes carry as AES-CTR does.
SUITE.push({ name: "camellia-256-ctr", key: crypto.randomBytes(32).toString("hex"), iv: "0000000000000000fffffffffffffffd" });
SUITE.push({ name: "sm4-ctr", key: crypto.randomBytes(16).toString("hex"), iv: "000000000000000000fffffffffffffd" });

const AEAD = /gcm|poly1305/i;

function hostOptions(c: Case) {
  return c.tagLength === undefined ? undefined : { authTagLength: c.tagLength };
}

function hostCipher(c: Case, decrypt: boolean) {
  const iv = c.iv === null ? null : Buffer.from(c.iv, "hex");
  const key = Buffer.from(c.key, "hex");
  return (
    decrypt
      ? crypto.createDecipheriv(c.name, key, iv, hostOptions(c) as never)
      : crypto.createCipheriv(c.name, key, iv, hostOptions(c) as never)
  ) as crypto.CipherGCM & crypto.DecipherGCM;
}

describe("runtime: crypto ciphers, key derivation and key generation", function () {
  this.timeout(240_000);
  let runtime: Runtime;

  before(async () => {
    runtime = await startRuntime({ workers: 1, timeoutMs: 30_000, memoryMb: 128 });
  });
  after(async () => runtime.close());

  async function run(code: string, event: Record<string, unknown> = {}) {
    const prepared = await prepareCode(runtime, code);
    const outcome = await runtime.invoke(invocation(prepared, { event }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    return outcome.emits[0]?.event as any;
  }

  // The component's helpers: one cipher run over the cut data, each update's output kept.
  const CIPHER_HELPERS = `
    const CUTS = ${JSON.stringify(CUTS)};
    function pieces(data) {
      const out = [];
      for (let i = 0, at = 0; at < data.length; i++) { const n = CUTS[i % CUTS.length]; out.push(data.subarray(at, at + n)); at += n; }
      return out;
    }
    function options(c) { return c.tagLength === undefined ? undefined : { authTagLength: c.tagLength }; }
    function cipherOf(c, decrypt) {
      const iv = c.iv === null ? null : Buffer.from(c.iv, "hex");
      const make = decrypt ? crypto.createDecipheriv : crypto.createCipheriv;
      return make(c.name, Buffer.from(c.key, "hex"), iv, options(c));
    }`;

  it("encrypts with each cipher as Node does, update by update, and Node decrypts it", async () => {
    const plain = Buffer.from("Headwater ciphers: a message long enough for several blocks, é漢字 and emoji 🙂, ".repeat(3));
    const e = await run(
      `import crypto from "crypto";
       ${CIPHER_HELPERS}
       export default { name: "enc", version: "1", async run(event) {
         const plain = Buffer.from(event.plain, "base64");
         const out = event.suite.map((c) => {
           const cipher = cipherOf(c, false);
           if (c.aad) cipher.setAAD(Buffer.from(c.aad));
           const updates = pieces(plain).map((p) => cipher.update(p).toString("hex"));
           const last = cipher.final().toString("hex");
           return { updates, last, tag: /gcm|poly1305/i.test(c.name) ? cipher.getAuthTag().toString("hex") : null };
         });
         this.$emit({ out, ciphers: crypto.getCiphers() });
       } };`,
      { plain: plain.toString("base64"), suite: SUITE },
    );
    SUITE.forEach((c, i) => {
      const got = e.out[i];
      const cipher = hostCipher(c, false);
      if (c.aad) cipher.setAAD(Buffer.from(c.aad));
      const updates = pieces(plain).map((p) => cipher.update(p).toString("hex"));
      expect(got.updates, c.name).to.deep.equal(updates);
      expect(got.last, c.name).to.equal(cipher.final().toString("hex"));
      if (AEAD.test(c.name)) expect(got.tag, c.name).to.equal(cipher.getAuthTag().toString("hex"));
      // And the host decrypts it, tag checked.
      const decipher = hostCipher(c, true);
      if (c.aad) decipher.setAAD(Buffer.from(c.aad));
      if (AEAD.test(c.name)) decipher.setAuthTag(Buffer.from(got.tag, "hex"));
      const back = Buffer.concat([decipher.update(Buffer.from(got.updates.join("") + got.last, "hex")), decipher.final()]);
      expect(back.equals(plain), c.name).to.equal(true);
    });
    expect(e.ciphers).to.include.members(["aes-128-cbc", "aes-192-ctr", "aes-256-gcm", "aes-256-ecb", "chacha20-poly1305", "aes256"]);
    expect(e.ciphers).not.to.include("aes-128-ocb");
  });

  it("decrypts what Node encrypted, update by update as Node's Decipheriv gives it (the padded last block held back)", async () => {
    const plain = crypto.randomBytes(300);
    const made = SUITE.map((c) => {
      const cipher = hostCipher(c, false);
      if (c.aad) cipher.setAAD(Buffer.from(c.aad));
      const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
      return { ct: ct.toString("hex"), tag: AEAD.test(c.name) ? cipher.getAuthTag().toString("hex") : null };
    });
    const e = await run(
      `import crypto from "crypto";
       ${CIPHER_HELPERS}
       export default { name: "dec", version: "1", async run(event) {
         const out = event.suite.map((c, i) => {
           const decipher = cipherOf(c, true);
           if (c.aad) decipher.setAAD(Buffer.from(c.aad));
           const { ct, tag } = event.made[i];
           const updates = pieces(Buffer.from(ct, "hex")).map((p) => decipher.update(p).toString("hex"));
           // Node takes the tag after the data too.
           if (tag) decipher.setAuthTag(Buffer.from(tag, "hex"));
           return { updates, last: decipher.final().toString("hex") };
         });
         this.$emit({ out });
       } };`,
      { suite: SUITE, made },
    );
    SUITE.forEach((c, i) => {
      const decipher = hostCipher(c, true);
      if (c.aad) decipher.setAAD(Buffer.from(c.aad));
      const updates = pieces(Buffer.from(made[i].ct, "hex")).map((p) => decipher.update(p).toString("hex"));
      if (made[i].tag) decipher.setAuthTag(Buffer.from(made[i].tag, "hex"));
      expect(e.out[i].updates, c.name).to.deep.equal(updates);
      expect(e.out[i].last, c.name).to.equal(decipher.final().toString("hex"));
      expect(Buffer.from(e.out[i].updates.join("") + e.out[i].last, "hex").equals(plain), c.name).to.equal(true);
    });
  });

  it("reads and writes string encodings across updates as Node's StringDecoder does (a character split between update and final)", async () => {
    const key = crypto.randomBytes(32);
    const iv = crypto.randomBytes(16);
    // 31 bytes of ASCII then a 3-byte character: the padded last block cuts it.
    const text = `${"a".repeat(31)}漢字のテキスト, and more: ${"é".repeat(20)}`;
    const c = crypto.createCipheriv("aes-256-cbc", key, iv);
    const b64 = c.update(text, "utf8", "base64") + c.final("base64");
    const e = await run(
      `import crypto from "crypto";
       export default { name: "enc", version: "1", async run(event) {
         const key = Buffer.from(event.key, "hex"), iv = Buffer.from(event.iv, "hex");
         const d = crypto.createDecipheriv("aes-256-cbc", key, iv);
         const text = d.update(event.b64, "base64", "utf8") + d.final("utf8");
         const c = crypto.createCipheriv("aes-256-cbc", key, iv);
         const b64 = c.update(event.text, "utf8", "base64") + c.final("base64");
         const h = crypto.createCipheriv("aes-256-cbc", key, iv);
         const parts = [h.update(event.text.slice(0, 10), "utf8", "hex"), h.update(event.text.slice(10), "utf8", "hex"), h.final("hex")];
         let changed;
         try { const x = crypto.createCipheriv("aes-256-cbc", key, iv); x.update("abc", "utf8", "hex"); x.final("base64"); } catch (err) { changed = err.code; }
         this.$emit({ text, b64, hex: parts.join(""), changed });
       } };`,
      { key: key.toString("hex"), iv: iv.toString("hex"), b64, text },
    );
    expect(e.text).to.equal(text);
    expect(e.b64).to.equal(b64);
    expect(Buffer.from(e.hex, "hex").toString("base64")).to.equal(b64);
    expect(e.changed).to.equal("ERR_INTERNAL_ASSERTION");
  });

  it("refuses a tampered GCM or chacha20-poly1305 message, a missing tag and a tag of the wrong length, as Node does", async () => {
    const key = crypto.randomBytes(32);
    const iv = crypto.randomBytes(12);
    const seal = (name: string) => {
      const c = crypto.createCipheriv(name, key, iv) as crypto.CipherGCM;
      c.setAAD(Buffer.from("aad"));
      const ct = Buffer.concat([c.update("attack at dawn"), c.final()]);
      return { ct: ct.toString("hex"), tag: c.getAuthTag().toString("hex") };
    };
    const e = await run(
      `import crypto from "crypto";
       export default { name: "tamper", version: "1", async run(event) {
         const key = Buffer.from(event.key, "hex"), iv = Buffer.from(event.iv, "hex");
         const open = (name, ct, tag, aad = "aad") => {
           const d = crypto.createDecipheriv(name, key, iv);
           d.setAAD(Buffer.from(aad));
           if (tag !== undefined) d.setAuthTag(Buffer.from(tag, "hex"));
           const out = d.update(Buffer.from(ct, "hex"));
           try { return out.toString() + d.final().toString(); } catch (err) { return { message: err.message, code: err.code ?? null, name: err.name }; }
         };
         const flip = (hex) => (parseInt(hex[0], 16) ^ 1).toString(16) + hex.slice(1);
         const out = {};
         for (const [name, s] of Object.entries(event.sealed)) {
           out[name] = {
             good: open(name, s.ct, s.tag),
             tag: open(name, s.ct, flip(s.tag)),
             data: open(name, flip(s.ct), s.tag),
             aad: open(name, s.ct, s.tag, "AAD"),
             none: open(name, s.ct, undefined),
           };
         }
         const errors = {};
         const err = (f) => { try { f(); return null; } catch (e) { return { message: e.message, code: e.code ?? null, name: e.name }; } };
         errors.shortTag = err(() => crypto.createDecipheriv("aes-256-gcm", key, iv).setAuthTag(Buffer.alloc(3)));
         errors.chachaTag = err(() => crypto.createDecipheriv("chacha20-poly1305", key, iv).setAuthTag(Buffer.alloc(8)));
         errors.optionTag = err(() => crypto.createDecipheriv("aes-256-gcm", key, iv, { authTagLength: 8 }).setAuthTag(Buffer.alloc(16)));
         errors.twice = err(() => crypto.createDecipheriv("aes-256-gcm", key, iv).setAuthTag(Buffer.alloc(16)).setAuthTag(Buffer.alloc(16)));
         errors.tagEarly = err(() => crypto.createCipheriv("aes-256-gcm", key, iv).getAuthTag());
         errors.aadLate = err(() => { const c = crypto.createCipheriv("aes-256-gcm", key, iv); c.update("x"); c.setAAD(Buffer.from("a")); });
         errors.aadCbc = err(() => crypto.createCipheriv("aes-256-cbc", key, Buffer.alloc(16)).setAAD(Buffer.from("a")));
         errors.badTagLength = err(() => crypto.createCipheriv("aes-256-gcm", key, iv, { authTagLength: 5 }));
         errors.ccm = err(() => crypto.createCipheriv("aes-256-ccm", key, iv, { authTagLength: 16 }));
         this.$emit({ out, errors });
       } };`,
      {
        key: key.toString("hex"),
        iv: iv.toString("hex"),
        sealed: { "aes-256-gcm": seal("aes-256-gcm"), "chacha20-poly1305": seal("chacha20-poly1305") },
      },
    );
    const refused = { message: "Unsupported state or unable to authenticate data", code: null, name: "Error" };
    for (const name of ["aes-256-gcm", "chacha20-poly1305"]) {
      const o = e.out[name];
      expect(o.good, name).to.equal("attack at dawn");
      for (const bad of ["tag", "data", "aad", "none"]) expect(o[bad], `${name} ${bad}`).to.deep.equal(refused);
    }
    const state = (op: string) => ({ message: `Invalid state for operation ${op}`, code: "ERR_CRYPTO_INVALID_STATE", name: "Error" });
    expect(e.errors.shortTag).to.deep.equal({
      message: "Invalid authentication tag length: 3",
      code: "ERR_CRYPTO_INVALID_AUTH_TAG",
      name: "TypeError",
    });
    expect(e.errors.chachaTag).to.deep.equal({
      message: "Invalid authentication tag length: 8",
      code: "ERR_CRYPTO_INVALID_AUTH_TAG",
      name: "TypeError",
    });
    expect(e.errors.optionTag).to.deep.equal({
      message: "Invalid authentication tag length: 16",
      code: "ERR_CRYPTO_INVALID_AUTH_TAG",
      name: "TypeError",
    });
    expect(e.errors.twice).to.deep.equal(state("setAuthTag"));
    expect(e.errors.tagEarly).to.deep.equal(state("getAuthTag"));
    expect(e.errors.aadLate).to.deep.equal(state("setAAD"));
    expect(e.errors.aadCbc).to.deep.equal(state("setAAD"));
    expect(e.errors.badTagLength).to.deep.equal({
      message: "Invalid authentication tag length: 5",
      code: "ERR_CRYPTO_INVALID_AUTH_TAG",
      name: "TypeError",
    });
    expect(e.errors.ccm.code).to.equal("ERR_CRYPTO_UNKNOWN_CIPHER");
    expect(e.errors.ccm.message).to.match(/aes-256-ccm is not available in the Headwater sandbox/);
  });

  it("turns padding off, and fails a wrong key, IV, final block or padding with Node's errors", async () => {
    const key = crypto.randomBytes(32);
    const iv = crypto.randomBytes(16);
    const e = await run(
      `import crypto from "crypto";
       export default { name: "padding", version: "1", async run(event) {
         const key = Buffer.from(event.key, "hex"), iv = Buffer.from(event.iv, "hex");
         const err = (f) => { try { f(); return null; } catch (e) { return { message: e.message, code: e.code ?? null, name: e.name }; } };
         const c = crypto.createCipheriv("aes-256-cbc", key, iv);
         c.setAutoPadding(false);
         const raw = Buffer.concat([c.update(Buffer.alloc(20, 7)), c.update(Buffer.alloc(12, 7)), c.final()]).toString("hex");
         this.$emit({
           raw,
           keyLength: err(() => crypto.createCipheriv("aes-256-cbc", key.subarray(0, 5), iv)),
           ivLength: err(() => crypto.createCipheriv("aes-256-cbc", key, iv.subarray(0, 5))),
           ecbIv: err(() => crypto.createCipheriv("aes-256-ecb", key, iv)),
           unknown: err(() => crypto.createCipheriv("aes-256-foo", key, iv)),
           keyType: err(() => crypto.createCipheriv("aes-256-cbc", 5, iv)),
           privateKey: err(() => crypto.createCipheriv("aes-256-cbc", crypto.generateKeyPairSync("ed25519").privateKey, iv)),
           secretKey: crypto.createCipheriv("aes-256-cbc", crypto.createSecretKey(key), iv).final("hex"),
           wrongFinal: err(() => { const x = crypto.createCipheriv("aes-256-cbc", key, iv); x.setAutoPadding(false); x.update("abc"); x.final(); }),
           badDecrypt: err(() => { const x = crypto.createDecipheriv("aes-256-cbc", key, iv); x.update(Buffer.alloc(32)); x.final(); }),
           shortDecrypt: err(() => { const x = crypto.createDecipheriv("aes-256-cbc", key, iv); x.update(Buffer.alloc(15)); x.final(); }),
           finalTwice: err(() => { const x = crypto.createCipheriv("aes-256-cbc", key, iv); x.final(); x.final(); }),
           updateAfter: err(() => { const x = crypto.createCipheriv("aes-256-cbc", key, iv); x.final(); x.update("a"); }),
           paddingAfter: err(() => { const x = crypto.createCipheriv("aes-256-cbc", key, iv); x.final(); x.setAutoPadding(false); }),
           dataType: err(() => crypto.createCipheriv("aes-256-cbc", key, iv).update(5)),
           oddHex: err(() => crypto.createCipheriv("aes-256-cbc", key, iv).update("abc", "hex")),
         });
       } };`,
      { key: key.toString("hex"), iv: iv.toString("hex") },
    );
    const c = crypto.createCipheriv("aes-256-cbc", key, iv).setAutoPadding(false);
    expect(e.raw).to.equal(Buffer.concat([c.update(Buffer.alloc(32, 7)), c.final()]).toString("hex"));
    expect(e.keyLength).to.deep.equal({ message: "Invalid key length", code: "ERR_CRYPTO_INVALID_KEYLEN", name: "RangeError" });
    expect(e.ivLength).to.deep.equal({ message: "Invalid initialization vector", code: "ERR_CRYPTO_INVALID_IV", name: "TypeError" });
    expect(e.ecbIv).to.deep.equal({ message: "Invalid initialization vector", code: "ERR_CRYPTO_INVALID_IV", name: "TypeError" });
    expect(e.unknown).to.deep.equal({ message: "Unknown cipher", code: "ERR_CRYPTO_UNKNOWN_CIPHER", name: "Error" });
    expect(e.keyType.code).to.equal("ERR_INVALID_ARG_TYPE");
    expect(e.keyType.message).to.equal(
      'The "key" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey. Received type number (5)',
    );
    expect(e.privateKey).to.deep.equal({
      message: "Invalid key object type private, expected secret.",
      code: "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE",
      name: "TypeError",
    });
    expect(e.secretKey).to.equal(crypto.createCipheriv("aes-256-cbc", key, iv).final("hex"));
    expect(e.wrongFinal).to.deep.equal({
      message: "error:1C80006B:Provider routines::wrong final block length",
      code: "ERR_OSSL_WRONG_FINAL_BLOCK_LENGTH",
      name: "Error",
    });
    expect(e.badDecrypt).to.deep.equal({
      message: "error:1C800064:Provider routines::bad decrypt",
      code: "ERR_OSSL_BAD_DECRYPT",
      name: "Error",
    });
    expect(e.shortDecrypt?.code).to.equal("ERR_OSSL_WRONG_FINAL_BLOCK_LENGTH");
    expect(e.finalTwice).to.deep.equal({ message: "Invalid state", code: "ERR_CRYPTO_INVALID_STATE", name: "Error" });
    expect(e.updateAfter).to.deep.equal({ message: "Trying to add data in unsupported state", code: null, name: "Error" });
    expect(e.paddingAfter).to.deep.equal({
      message: "Invalid state for operation setAutoPadding",
      code: "ERR_CRYPTO_INVALID_STATE",
      name: "Error",
    });
    expect(e.dataType.message).to.equal(
      'The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (5)',
    );
    expect(e.oddHex).to.deep.equal({
      message: "The argument 'encoding' is invalid for data of length 3. Received 'hex'",
      code: "ERR_INVALID_ARG_VALUE",
      name: "TypeError",
    });
  });

  it("derives keys with pbkdf2, scrypt and hkdf (sync and callback forms) equal to Node's", async () => {
    const e = await run(
      `import crypto from "crypto";
       import { promisify } from "util";
       export default { name: "kdf", version: "1", async run() {
         const hex = (b) => Buffer.from(b).toString("hex");
         const pbkdf2Cb = await promisify(crypto.pbkdf2)("pw", "salt", 1000, 64, "sha512");
         const scryptCb = await new Promise((ok, no) => crypto.scrypt("pw", "salt", 32, (err, key) => (err ? no(err) : ok(key))));
         const hkdfCb = await new Promise((ok, no) => crypto.hkdf("sha256", "ikm", "salt", "info", 42, (err, key) => (err ? no(err) : ok(key))));
         this.$emit({
           pbkdf2: [
             hex(crypto.pbkdf2Sync("password", "salt", 1, 20, "sha1")),
             hex(crypto.pbkdf2Sync(Buffer.from("pässword"), new Uint8Array([1, 2, 3]), 100000, 32, "sha256")),
             hex(crypto.pbkdf2Sync("pw", "salt", 10, 100, "sha256")),
             hex(crypto.pbkdf2Sync("pw", "salt", 1, 0, "sha1")),
             hex(pbkdf2Cb),
           ],
           scrypt: [
             hex(crypto.scryptSync("pw", "salt", 64)),
             hex(crypto.scryptSync("pw", Buffer.from("salt"), 32, { N: 1024, r: 4, p: 2 })),
             hex(crypto.scryptSync("pw", "salt", 16, { cost: 2 ** 15, blockSize: 8, maxmem: 64 * 1024 * 1024 })),
             hex(scryptCb),
           ],
           hkdf: [hex(crypto.hkdfSync("sha256", "ikm", "salt", "info", 42)), crypto.hkdfSync("sha512", crypto.createSecretKey(Buffer.from("k")), "", "", 16) instanceof ArrayBuffer, hex(hkdfCb)],
         });
       } };`,
    );
    const hex = (b: ArrayBuffer | Buffer) => Buffer.from(b as ArrayBuffer).toString("hex");
    expect(e.pbkdf2).to.deep.equal([
      hex(crypto.pbkdf2Sync("password", "salt", 1, 20, "sha1")),
      hex(crypto.pbkdf2Sync(Buffer.from("pässword"), new Uint8Array([1, 2, 3]), 100000, 32, "sha256")),
      hex(crypto.pbkdf2Sync("pw", "salt", 10, 100, "sha256")),
      "",
      hex(crypto.pbkdf2Sync("pw", "salt", 1000, 64, "sha512")),
    ]);
    expect(e.scrypt).to.deep.equal([
      hex(crypto.scryptSync("pw", "salt", 64)),
      hex(crypto.scryptSync("pw", Buffer.from("salt"), 32, { N: 1024, r: 4, p: 2 })),
      hex(crypto.scryptSync("pw", "salt", 16, { cost: 2 ** 15, blockSize: 8, maxmem: 64 * 1024 * 1024 })),
      hex(crypto.scryptSync("pw", "salt", 32)),
    ]);
    expect(e.hkdf).to.deep.equal([
      hex(crypto.hkdfSync("sha256", "ikm", "salt", "info", 42)),
      true,
      hex(crypto.hkdfSync("sha256", "ikm", "salt", "info", 42)),
    ]);
  });

  it("refuses key derivation past its bounds at once with a RangeError, and bad arguments with Node's errors", async function () {
    // A refusal is immediate; any of these computed would take minutes to hours (the mocha timeout catches a hang).
    this.timeout(60_000);
    const encrypted = crypto.generateKeyPairSync("ec", {
      namedCurve: "P-256",
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem", cipher: "aes-128-cbc", passphrase: "pw" },
    }).privateKey;
    const e = await run(
      `import crypto from "crypto";
       export default { name: "bounds", version: "1", async run(event) {
         const err = (f) => { try { f(); return null; } catch (e) { return { message: e.message, code: e.code ?? null, name: e.name }; } };
         this.$emit({
           iterations: err(() => crypto.pbkdf2Sync("pw", "salt", 1_000_001, 32, "sha256")),
           iterationsMax: err(() => crypto.pbkdf2Sync("pw", "salt", 2 ** 31 - 1, 32, "sha256")),
           pbkdf2Work: err(() => crypto.pbkdf2Sync("pw", "salt", 1_000_000, 20 * 5, "sha1")),
           pbkdf2Keylen: err(() => crypto.pbkdf2Sync("pw", "salt", 1, 2 ** 30, "sha1")),
           pbkdf2Async: err(() => crypto.pbkdf2("pw", "salt", 2 ** 30, 32, "sha256", () => {})),
           scryptWork: err(() => crypto.scryptSync("pw", "salt", 32, { N: 2 ** 16, r: 8, p: 16, maxmem: 2 ** 31 })),
           scryptMemory: err(() => crypto.scryptSync("pw", "salt", 32, { N: 2 ** 20, r: 1, maxmem: 2 ** 31 })),
           scryptKeylen: err(() => crypto.scryptSync("pw", "salt", 2 ** 31 - 1)),
           scryptMaxmem: err(() => crypto.scryptSync("pw", "salt", 32, { N: 2 ** 15, r: 8 })),
           scryptParams: err(() => crypto.scryptSync("pw", "salt", 32, { N: 3 })),
           scryptCounter: err(() => crypto.scryptSync("pw", "salt", 32, { N: 2 ** 16, r: 1 })),
           iterationsZero: err(() => crypto.pbkdf2Sync("pw", "salt", 0, 32, "sha256")),
           iterationsType: err(() => crypto.pbkdf2Sync("pw", "salt", "1", 32, "sha256")),
           digest: err(() => crypto.pbkdf2Sync("pw", "salt", 1, 32, "foo")),
           noDigest: err(() => crypto.pbkdf2Sync("pw", "salt", 1, 32)),
           password: err(() => crypto.pbkdf2Sync(5, "salt", 1, 32, "sha1")),
           noCallback: err(() => crypto.pbkdf2("pw", "salt", 1, 32, "sha1")),
           hkdfKeylen: err(() => crypto.hkdfSync("sha256", "k", "s", "i", 255 * 32 + 1)),
           hkdfIkm: err(() => crypto.hkdfSync("sha256", 5, "s", "i", 16)),
           // OpenSSL's refusals of scrypt's memory, had they reached it, would fail this next passphrase-encrypted key.
           keyAfter: crypto.createPrivateKey({ key: event.encrypted, passphrase: "pw" }).asymmetricKeyType,
         });
       } };`,
      { encrypted },
    );
    expect(e.scryptCounter).to.deep.equal(e.scryptMaxmem);
    expect(e.keyAfter).to.equal("ec");
    for (const bound of [
      "iterations",
      "iterationsMax",
      "pbkdf2Work",
      "pbkdf2Keylen",
      "pbkdf2Async",
      "scryptWork",
      "scryptMemory",
      "scryptKeylen",
    ]) {
      expect(e[bound]?.name, bound).to.equal("RangeError");
      expect(e[bound].code, bound).to.equal("ERR_OUT_OF_RANGE");
      expect(e[bound].message, bound).to.match(/the Headwater sandbox bounds the work of deriving a key/);
    }
    expect(e.iterations.message).to.match(/"iterations" is 1000001; at most 1000000/);
    expect(e.scryptMaxmem).to.deep.equal({
      message: "Invalid scrypt params: error:030000AC:digital envelope routines::memory limit exceeded",
      code: "ERR_CRYPTO_INVALID_SCRYPT_PARAMS",
      name: "RangeError",
    });
    expect(e.scryptParams).to.deep.equal({
      message: "Invalid scrypt params",
      code: "ERR_CRYPTO_INVALID_SCRYPT_PARAMS",
      name: "RangeError",
    });
    expect(e.iterationsZero).to.deep.equal({
      message: 'The value of "iterations" is out of range. It must be >= 1 && <= 2147483647. Received 0',
      code: "ERR_OUT_OF_RANGE",
      name: "RangeError",
    });
    expect(e.iterationsType).to.deep.equal({
      message: `The "iterations" argument must be of type number. Received type string ('1')`,
      code: "ERR_INVALID_ARG_TYPE",
      name: "TypeError",
    });
    expect(e.digest).to.deep.equal({ message: "Invalid digest: foo", code: "ERR_CRYPTO_INVALID_DIGEST", name: "TypeError" });
    expect(e.noDigest.message).to.equal('The "digest" argument must be of type string. Received undefined');
    expect(e.password.message).to.equal(
      'The "password" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView. Received type number (5)',
    );
    expect(e.noCallback.message).to.equal('The "callback" argument must be of type function. Received undefined');
    expect(e.hkdfKeylen).to.deep.equal({ message: "Invalid key length", code: "ERR_CRYPTO_INVALID_KEYLEN", name: "RangeError" });
    expect(e.hkdfIkm.code).to.equal("ERR_INVALID_ARG_TYPE");
  });

  it("generates key pairs (rsa, rsa-pss, ec, ed25519, x25519) Node can use: it verifies what the component signed with them", async () => {
    const e = await run(
      `import crypto from "crypto";
       import { promisify } from "util";
       export default { name: "keygen", version: "1", async run() {
         const data = Buffer.from("signed in the sandbox");
         const rsa = crypto.generateKeyPairSync("rsa", {
           modulusLength: 2048,
           publicKeyEncoding: { type: "spki", format: "pem" },
           privateKeyEncoding: { type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "top secret" },
         });
         const rsaSig = crypto.sign("sha256", data, { key: rsa.privateKey, passphrase: "top secret" }).toString("base64");
         const pss = crypto.generateKeyPairSync("rsa-pss", { modulusLength: 2048, hashAlgorithm: "sha256", saltLength: 32 });
         const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
         const ed = crypto.generateKeyPairSync("ed25519", { publicKeyEncoding: { type: "spki", format: "der" }, privateKeyEncoding: { type: "pkcs8", format: "der" } });
         const x = crypto.generateKeyPairSync("x25519");
         const jwk = crypto.generateKeyPairSync("ec", { namedCurve: "secp256k1", publicKeyEncoding: { format: "jwk" } });
         const [asyncPublic, asyncPrivate] = await new Promise((ok, no) =>
           crypto.generateKeyPair("ec", { namedCurve: "P-384" }, (err, pub, priv) => (err ? no(err) : ok([pub, priv]))),
         );
         const err = (f) => { try { f(); return null; } catch (e) { return { message: e.message, code: e.code ?? null, name: e.name }; } };
         const hmac = crypto.generateKeySync("hmac", { length: 100 });
         const aes = await promisify(crypto.generateKey)("aes", { length: 256 });
         this.$emit({
           rsa: { public: rsa.publicKey, private: rsa.privateKey, sig: rsaSig },
           pss: { public: pss.publicKey.export({ type: "spki", format: "pem" }), details: { ...pss.publicKey.asymmetricKeyDetails, publicExponent: String(pss.publicKey.asymmetricKeyDetails.publicExponent) }, sig: crypto.sign("sha256", data, { key: pss.privateKey, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }).toString("base64") },
           ec: { public: ec.publicKey.export({ type: "spki", format: "pem" }), type: ec.privateKey.asymmetricKeyType, sig: crypto.createSign("sha256").update(data).sign(ec.privateKey, "base64") },
           ed: { public: ed.publicKey.toString("base64"), isBuffer: Buffer.isBuffer(ed.privateKey), sig: crypto.sign(null, data, crypto.createPrivateKey({ key: ed.privateKey, format: "der", type: "pkcs8" })).toString("base64") },
           x: { type: x.publicKey.asymmetricKeyType, privateType: x.privateKey.type, public: x.publicKey.export({ type: "spki", format: "pem" }) },
           jwk: jwk.publicKey,
           async: { public: asyncPublic.export({ type: "spki", format: "pem" }), sig: crypto.sign("sha384", data, asyncPrivate).toString("base64") },
           secret: { hmac: hmac.symmetricKeySize, aes: aes.symmetricKeySize, type: aes.type },
           errors: {
             big: err(() => crypto.generateKeyPairSync("rsa", { modulusLength: 8192 })),
             dsa: err(() => crypto.generateKeyPairSync("dsa", { modulusLength: 2048 })),
             noModulus: err(() => crypto.generateKeyPairSync("rsa", {})),
             curve: err(() => crypto.generateKeyPairSync("ec", { namedCurve: "foo" })),
             type: err(() => crypto.generateKeyPairSync("foo", {})),
             encoding: err(() => crypto.generateKeyPairSync("ed25519", { publicKeyEncoding: { type: "foo", format: "pem" } })),
             aesLength: err(() => crypto.generateKeySync("aes", { length: 100 })),
             hmacLength: err(() => crypto.generateKeySync("hmac", { length: 7 })),
           },
         });
       } };`,
    );
    const data = Buffer.from("signed in the sandbox");
    const rsaPrivate = crypto.createPrivateKey({ key: e.rsa.private, passphrase: "top secret" });
    expect(e.rsa.private).to.match(/^-----BEGIN ENCRYPTED PRIVATE KEY-----/);
    expect(rsaPrivate.asymmetricKeyDetails?.modulusLength).to.equal(2048);
    expect(crypto.verify("sha256", data, e.rsa.public, Buffer.from(e.rsa.sig, "base64"))).to.equal(true);
    expect(crypto.createPublicKey(rsaPrivate).export({ type: "spki", format: "pem" })).to.equal(e.rsa.public);
    expect(e.pss.details).to.deep.include({ modulusLength: 2048, publicExponent: "65537", hashAlgorithm: "sha256", saltLength: 32 });
    expect(
      crypto.verify(
        "sha256",
        data,
        { key: e.pss.public, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 },
        Buffer.from(e.pss.sig, "base64"),
      ),
    ).to.equal(true);
    expect(e.ec.type).to.equal("ec");
    expect(crypto.createVerify("sha256").update(data).verify(e.ec.public, e.ec.sig, "base64")).to.equal(true);
    expect(e.ed.isBuffer).to.equal(true);
    const edPublic = crypto.createPublicKey({ key: Buffer.from(e.ed.public, "base64"), format: "der", type: "spki" });
    expect(crypto.verify(null, data, edPublic, Buffer.from(e.ed.sig, "base64"))).to.equal(true);
    expect(e.x).to.deep.include({ type: "x25519", privateType: "private" });
    expect(crypto.createPublicKey(e.x.public).asymmetricKeyType).to.equal("x25519");
    expect(e.jwk).to.include({ kty: "EC", crv: "secp256k1" });
    expect(crypto.createPublicKey({ key: e.jwk, format: "jwk" }).asymmetricKeyType).to.equal("ec");
    expect(crypto.verify("sha384", data, e.async.public, Buffer.from(e.async.sig, "base64"))).to.equal(true);
    expect(e.secret).to.deep.equal({ hmac: 12, aes: 32, type: "secret" });
    expect(e.errors.big.name).to.equal("RangeError");
    expect(e.errors.big.message).to.match(/8192 bits; the Headwater sandbox generates keys of at most 4096 bits/);
    expect(e.errors.dsa.message).to.match(/Generating dsa keys is not available in the Headwater sandbox/);
    expect(e.errors.noModulus).to.deep.equal({
      message: 'The "options.modulusLength" property must be of type number. Received undefined',
      code: "ERR_INVALID_ARG_TYPE",
      name: "TypeError",
    });
    expect(e.errors.curve).to.deep.equal({ message: "Invalid EC curve name", code: "ERR_CRYPTO_INVALID_CURVE", name: "TypeError" });
    expect(e.errors.type).to.deep.equal({
      message: "The argument 'type' must be a supported key type. Received 'foo'",
      code: "ERR_INVALID_ARG_VALUE",
      name: "TypeError",
    });
    expect(e.errors.encoding).to.deep.equal({
      message: "The property 'options.publicKeyEncoding.type' is invalid. Received 'foo'",
      code: "ERR_INVALID_ARG_VALUE",
      name: "TypeError",
    });
    expect(e.errors.aesLength).to.deep.equal({
      message: "The property 'options.length' must be one of: 128, 192, 256. Received 100",
      code: "ERR_INVALID_ARG_VALUE",
      name: "TypeError",
    });
    expect(e.errors.hmacLength).to.deep.equal({
      message: 'The value of "options.length" is out of range. It must be >= 8 && <= 2147483647. Received 7',
      code: "ERR_OUT_OF_RANGE",
      name: "RangeError",
    });
  });

  it("agrees on shared secrets with Node: createECDH (P-256, secp256k1) and diffieHellman of x25519 and EC KeyObjects", async () => {
    const hostEcdh = crypto.createECDH("prime256v1");
    hostEcdh.generateKeys();
    const k1 = crypto.createECDH("secp256k1");
    k1.generateKeys();
    const x = crypto.generateKeyPairSync("x25519");
    const e = await run(
      `import crypto from "crypto";
       export default { name: "ecdh", version: "1", async run(event) {
         const err = (f) => { try { f(); return null; } catch (e) { return { message: e.message, code: e.code ?? null, name: e.name }; } };
         const ecdh = crypto.createECDH("prime256v1");
         const publicKey = ecdh.generateKeys("hex");
         const set = crypto.createECDH("secp256k1").setPrivateKey(event.k1Private, "hex");
         const x = crypto.generateKeyPairSync("x25519");
         const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
         this.$emit({
           publicKey,
           compressed: ecdh.getPublicKey("hex", "compressed"),
           secret: ecdh.computeSecret(event.hostPublic, "hex", "hex"),
           k1Public: set.getPublicKey("hex"),
           k1Secret: set.computeSecret(Buffer.from(event.k1Public, "hex")).toString("hex"),
           converted: crypto.ECDH.convertKey(event.hostPublic, "prime256v1", "hex", "hex", "compressed"),
           x: { public: x.publicKey.export({ type: "spki", format: "pem" }), secret: crypto.diffieHellman({ privateKey: x.privateKey, publicKey: crypto.createPublicKey(event.xPublic) }).toString("hex") },
           curves: crypto.getCurves().includes("prime256v1"),
           errors: {
             curve: err(() => crypto.createECDH("foo")),
             point: err(() => ecdh.computeSecret(Buffer.alloc(65, 1))),
             early: err(() => crypto.createECDH("prime256v1").getPrivateKey()),
             noPair: err(() => crypto.createECDH("prime256v1").computeSecret(Buffer.from(publicKey, "hex"))),
             format: err(() => ecdh.getPublicKey("hex", "foo")),
             mixed: err(() => crypto.diffieHellman({ privateKey: x.privateKey, publicKey: ec.publicKey })),
             publicAsPrivate: err(() => crypto.diffieHellman({ privateKey: x.publicKey, publicKey: x.publicKey })),
             notKey: err(() => crypto.diffieHellman({ privateKey: "x", publicKey: x.publicKey })),
           },
         });
       } };`,
      {
        hostPublic: hostEcdh.getPublicKey("hex"),
        k1Private: k1.getPrivateKey("hex"),
        k1Public: k1.getPublicKey("hex"),
        xPublic: x.publicKey.export({ type: "spki", format: "pem" }),
      },
    );
    expect(e.secret).to.equal(hostEcdh.computeSecret(e.publicKey, "hex", "hex"));
    expect(e.compressed).to.equal(crypto.ECDH.convertKey(e.publicKey, "prime256v1", "hex", "hex", "compressed"));
    expect(e.k1Public).to.equal(k1.getPublicKey("hex"));
    expect(e.k1Secret).to.equal(k1.computeSecret(k1.getPublicKey()).toString("hex"));
    expect(e.converted).to.equal(crypto.ECDH.convertKey(hostEcdh.getPublicKey(), "prime256v1", undefined, "hex", "compressed"));
    expect(e.x.secret).to.equal(
      crypto.diffieHellman({ privateKey: x.privateKey, publicKey: crypto.createPublicKey(e.x.public) }).toString("hex"),
    );
    expect(e.curves).to.equal(true);
    expect(e.errors).to.deep.equal({
      curve: { message: "Invalid EC curve name", code: "ERR_CRYPTO_INVALID_CURVE", name: "TypeError" },
      point: { message: "Public key is not valid for specified curve", code: "ERR_CRYPTO_ECDH_INVALID_PUBLIC_KEY", name: "Error" },
      early: { message: "Failed to get ECDH private key", code: "ERR_CRYPTO_OPERATION_FAILED", name: "Error" },
      noPair: { message: "Invalid key pair", code: "ERR_CRYPTO_INVALID_KEYPAIR", name: "RangeError" },
      format: { message: "Invalid ECDH format: foo", code: "ERR_CRYPTO_ECDH_INVALID_FORMAT", name: "TypeError" },
      mixed: { message: "Incompatible key types for Diffie-Hellman: x25519 and ec", code: "ERR_CRYPTO_INCOMPATIBLE_KEY", name: "Error" },
      publicAsPrivate: {
        message: "Invalid key object type public, expected private.",
        code: "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE",
        name: "TypeError",
      },
      notKey: { message: "The property 'options.privateKey' is invalid. Received 'x'", code: "ERR_INVALID_ARG_VALUE", name: "TypeError" },
    });
  });

  it("runs cryptr 6.4 (pbkdf2Sync and aes-256-gcm) and @wecom/crypto 1.0 (aes-256-cbc, padding off) from the registry, both ways with Node", async () => {
    const secret = "cryptr secret";
    // cryptr's format, made by Node: salt (64) | iv (16) | tag (16) | ciphertext, in hex.
    const salt = crypto.randomBytes(64);
    const iv = crypto.randomBytes(16);
    const cipher = crypto.createCipheriv("aes-256-gcm", crypto.pbkdf2Sync(secret, salt, 100000, 32, "sha512"), iv);
    const body = Buffer.concat([cipher.update("from the host, 漢字"), cipher.final()]);
    const fromHost = Buffer.concat([salt, iv, cipher.getAuthTag(), body]).toString("hex");
    // A WeCom callback message, encrypted by Node as WeCom's servers do (PKCS#7 to 32 bytes, padding off).
    const aesKey = crypto.randomBytes(32);
    const encodingAESKey = aesKey.toString("base64").slice(0, 43);
    const msg = Buffer.from("<xml><Content>企业微信</Content></xml>");
    const len = Buffer.alloc(4);
    len.writeUInt32BE(msg.length);
    const plain = Buffer.concat([crypto.randomBytes(16), len, msg, Buffer.from("corp-id")]);
    const pad = 32 - (plain.length % 32);
    const w = crypto.createCipheriv("aes-256-cbc", aesKey, aesKey.subarray(0, 16)).setAutoPadding(false);
    const wecomFromHost = Buffer.concat([w.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), w.final()]).toString("base64");

    const e = await run(
      `import Cryptr from "cryptr@6.4.0";
       import { decrypt, encrypt } from "@wecom/crypto@1.0.1";
       export default { name: "packages", version: "1", async run(event) {
         const cryptr = new Cryptr(event.secret);
         const wecom = decrypt(event.encodingAESKey, event.wecomFromHost);
         this.$emit({
           opened: cryptr.decrypt(event.fromHost),
           sealed: cryptr.encrypt("from the sandbox, 漢字"),
           wecom: { message: wecom.message, id: wecom.id },
           wecomSealed: encrypt(event.encodingAESKey, "<xml>回复</xml>", "corp-id"),
         });
       } };`,
      { secret, fromHost, encodingAESKey, wecomFromHost },
    );
    expect(e.opened).to.equal("from the host, 漢字");
    const sealed = Buffer.from(e.sealed, "hex");
    const d = crypto.createDecipheriv(
      "aes-256-gcm",
      crypto.pbkdf2Sync(secret, sealed.subarray(0, 64), 100000, 32, "sha512"),
      sealed.subarray(64, 80),
    );
    d.setAuthTag(sealed.subarray(80, 96));
    expect(Buffer.concat([d.update(sealed.subarray(96)), d.final()]).toString()).to.equal("from the sandbox, 漢字");
    expect(e.wecom).to.deep.equal({ message: msg.toString(), id: "corp-id" });
    const wd = crypto.createDecipheriv("aes-256-cbc", aesKey, aesKey.subarray(0, 16)).setAutoPadding(false);
    const opened = Buffer.concat([wd.update(e.wecomSealed, "base64"), wd.final()]);
    const n = opened.readUInt32BE(16);
    expect(opened.subarray(20, 20 + n).toString()).to.equal("<xml>回复</xml>");
    expect(opened.subarray(20 + n, opened.length - opened[opened.length - 1]).toString()).to.equal("corp-id");
  });
});
