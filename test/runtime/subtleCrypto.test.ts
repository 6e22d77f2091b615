// WebCrypto's crypto.subtle in the sandbox, against Node's own webcrypto on the host: the same probe
// runs in both and must answer the same, keys made in the sandbox work on the host and the other
// way, non-extractable keys stay unreadable, the host's work is bounded, and jose 6 (whose only
// build is the web one) signs and verifies. Real isolates; jose from the registry.
import { expect } from "chai";
import crypto from "node:crypto";
import { invocation, prepareCode, startRuntime, tempDir } from "./support.js";
import type { Runtime } from "../../src/runtime/index.js";

const { subtle } = crypto.webcrypto;
const hex = (b: ArrayBuffer | Uint8Array) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString("hex");
const der = (key: crypto.KeyObject) => hex(key.export({ format: "der", type: key.type === "private" ? "pkcs8" : "spki" }));

describe("runtime: crypto.subtle (WebCrypto)", function () {
  this.timeout(240_000);
  let runtime: Runtime;
  let cacheDir: string;

  before(async () => {
    cacheDir = await tempDir("subtle");
    runtime = await startRuntime({ workers: 1, timeoutMs: 30_000, memoryMb: 128, cacheDir });
  });
  after(async () => runtime.close());

  async function run(code: string, event: Record<string, unknown> = {}) {
    const prepared = await prepareCode(runtime, code);
    const outcome = await runtime.invoke(invocation(prepared, { event }));
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    return outcome.emits[0]?.event as any;
  }

  it("answers as Node's webcrypto: digests, HMAC, AES-GCM/CBC/CTR, PBKDF2, HKDF, ECDH, X25519, RSA, ECDSA, Ed25519 imports and exports, and the errors", async () => {
    const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
    const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
    const ed = crypto.generateKeyPairSync("ed25519");
    const [ecdhA, ecdhB] = [
      crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }),
      crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }),
    ];
    const [xA, xB] = [crypto.generateKeyPairSync("x25519"), crypto.generateKeyPairSync("x25519")];
    const label = Buffer.from("label");
    const oaepCipher = crypto.publicEncrypt(
      { key: rsa.publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256", oaepLabel: label },
      Buffer.from("oaep secret"),
    );
    const input = {
      secret: hex(crypto.randomBytes(32)),
      aes: hex(crypto.randomBytes(32)),
      iv12: hex(crypto.randomBytes(12)),
      iv16: hex(crypto.randomBytes(16)),
      rsaPkcs8: der(rsa.privateKey),
      rsaSpki: der(rsa.publicKey),
      ecPkcs8: der(ec.privateKey),
      ecRaw: hex(ec.publicKey.export({ format: "der", type: "spki" }).subarray(-65)),
      edPkcs8: der(ed.privateKey),
      edSpki: der(ed.publicKey),
      ecdhA: der(ecdhA.privateKey),
      ecdhB: der(ecdhB.publicKey),
      xA: der(xA.privateKey),
      xB: der(xB.publicKey),
      oaepCipher: hex(oaepCipher),
      label: hex(label),
    };
    const probe = `
      const enc = new TextEncoder();
      const data = enc.encode("payload: héllo");
      const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
      const bytes = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
      const caught = async (f) => { try { await f(); return "no error"; } catch (err) { return err.name; } };
      const out = { digests: {} };
      for (const h of ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]) out.digests[h] = hex(await subtle.digest(h, data));
      out.digests.object = hex(await subtle.digest({ name: "sha-256" }, data.buffer));

      const hmacKey = await subtle.importKey("raw", bytes(input.secret), { name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
      const mac = await subtle.sign("HMAC", hmacKey, data);
      const signOnly = await subtle.importKey("jwk", await subtle.exportKey("jwk", hmacKey), { name: "HMAC", hash: { name: "SHA-256" } }, false, ["sign"]);
      out.hmac = {
        mac: hex(mac), ok: await subtle.verify("HMAC", hmacKey, mac, data), bad: await subtle.verify("HMAC", hmacKey, new Uint8Array(32), data),
        alg: hmacKey.algorithm, usages: hmacKey.usages, type: hmacKey.type, extractable: hmacKey.extractable,
        jwk: await subtle.exportKey("jwk", hmacKey), raw: hex(await subtle.exportKey("raw", hmacKey)),
        fromJwk: hex(await subtle.sign("HMAC", signOnly, data)), tag: Object.prototype.toString.call(hmacKey),
      };

      const aesKey = await subtle.importKey("raw", bytes(input.aes), "AES-GCM", true, ["encrypt", "decrypt"]);
      const iv = bytes(input.iv12);
      const gcm = await subtle.encrypt({ name: "AES-GCM", iv, additionalData: enc.encode("aad") }, aesKey, data);
      const gcm96 = await subtle.encrypt({ name: "AES-GCM", iv, tagLength: 96 }, aesKey, data);
      const cbcKey = await subtle.importKey("raw", bytes(input.aes), { name: "AES-CBC" }, false, ["encrypt", "decrypt"]);
      const cbc = await subtle.encrypt({ name: "AES-CBC", iv: bytes(input.iv16) }, cbcKey, data);
      const ctrKey = await subtle.importKey("raw", bytes(input.aes).slice(0, 16), "AES-CTR", true, ["encrypt", "decrypt"]);
      // The counter's low byte is 0xfe: with length 8 it wraps to 0x00 after two blocks, without carrying.
      const counter = bytes("00112233445566778899aabbccddeefe");
      const ctr = await subtle.encrypt({ name: "AES-CTR", counter, length: 8 }, ctrKey, new Uint8Array(80));
      out.aes = {
        gcm: hex(gcm), gcm96: hex(gcm96), alg: aesKey.algorithm, jwk: await subtle.exportKey("jwk", aesKey), ctrJwk: await subtle.exportKey("jwk", ctrKey),
        back: hex(await subtle.decrypt({ name: "AES-GCM", iv, additionalData: enc.encode("aad") }, aesKey, gcm)),
        cbc: hex(cbc), cbcBack: hex(await subtle.decrypt({ name: "AES-CBC", iv: bytes(input.iv16) }, cbcKey, cbc)),
        ctr: hex(ctr), ctr64: hex(await subtle.encrypt({ name: "AES-CTR", counter, length: 64 }, ctrKey, new Uint8Array(80))),
        ctrBack: hex(await subtle.decrypt({ name: "AES-CTR", counter, length: 8 }, ctrKey, ctr)),
      };

      const pw = await subtle.importKey("raw", enc.encode("password"), "PBKDF2", false, ["deriveBits", "deriveKey"]);
      const derived = await subtle.deriveKey({ name: "PBKDF2", hash: "SHA-1", salt: enc.encode("salt"), iterations: 10 }, pw, { name: "AES-GCM", length: 128 }, true, ["encrypt"]);
      const ikm = await subtle.importKey("raw", bytes(input.secret), "HKDF", false, ["deriveBits", "deriveKey"]);
      const hmacDerived = await subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new Uint8Array(0) }, ikm, { name: "HMAC", hash: "SHA-384" }, true, ["sign"]);
      out.derive = {
        pbkdf2: hex(await subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: enc.encode("salt"), iterations: 1000 }, pw, 256)),
        pbkdf2Key: { raw: hex(await subtle.exportKey("raw", derived)), alg: derived.algorithm, usages: derived.usages, pw: [pw.algorithm, pw.extractable] },
        hkdf: hex(await subtle.deriveBits({ name: "HKDF", hash: "SHA-512", salt: enc.encode("s"), info: enc.encode("i") }, ikm, 512)),
        hkdfKey: { alg: hmacDerived.algorithm, raw: hex(await subtle.exportKey("raw", hmacDerived)) },
      };
      const a = await subtle.importKey("pkcs8", bytes(input.ecdhA), { name: "ECDH", namedCurve: "P-384" }, false, ["deriveBits"]);
      const b = await subtle.importKey("spki", bytes(input.ecdhB), { name: "ECDH", namedCurve: "P-384" }, true, []);
      const xa = await subtle.importKey("pkcs8", bytes(input.xA), { name: "X25519" }, false, ["deriveBits"]);
      const xb = await subtle.importKey("spki", bytes(input.xB), "X25519", true, []);
      out.derive.ecdh = [hex(await subtle.deriveBits({ name: "ECDH", public: b }, a, 256)), hex(await subtle.deriveBits({ name: "ECDH", public: b }, a, null)), b.usages];
      out.derive.x25519 = [hex(await subtle.deriveBits({ name: "X25519", public: xb }, xa, 256)), await subtle.exportKey("jwk", xb), hex(await subtle.exportKey("raw", xb))];

      const rsa = await subtle.importKey("pkcs8", bytes(input.rsaPkcs8), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["sign"]);
      const rsaPub = await subtle.importKey("spki", bytes(input.rsaSpki), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["verify"]);
      const rsaSig = await subtle.sign("RSASSA-PKCS1-v1_5", rsa, data);
      const pss = await subtle.importKey("pkcs8", bytes(input.rsaPkcs8), { name: "RSA-PSS", hash: "SHA-384" }, false, ["sign"]);
      const pssPub = await subtle.importKey("spki", bytes(input.rsaSpki), { name: "RSA-PSS", hash: "SHA-384" }, true, ["verify"]);
      const pssSig = await subtle.sign({ name: "RSA-PSS", saltLength: 48 }, pss, data);
      const oaep = await subtle.importKey("pkcs8", bytes(input.rsaPkcs8), { name: "RSA-OAEP", hash: "SHA-256" }, false, ["decrypt"]);
      out.rsa = {
        sig: hex(rsaSig), ok: await subtle.verify({ name: "RSASSA-PKCS1-v1_5" }, rsaPub, rsaSig, data),
        pss: [pssSig.byteLength, await subtle.verify({ name: "RSA-PSS", saltLength: 48 }, pssPub, pssSig, data), await subtle.verify({ name: "RSA-PSS", saltLength: 32 }, pssPub, pssSig, data)],
        alg: { ...rsa.algorithm, publicExponent: hex(rsa.algorithm.publicExponent) },
        jwk: await subtle.exportKey("jwk", rsa), pubJwk: await subtle.exportKey("jwk", rsaPub), pssJwk: await subtle.exportKey("jwk", pssPub),
        spki: hex(await subtle.exportKey("spki", rsaPub)), pkcs8: hex(await subtle.exportKey("pkcs8", rsa)),
        oaep: new TextDecoder().decode(await subtle.decrypt({ name: "RSA-OAEP", label: bytes(input.label) }, oaep, bytes(input.oaepCipher))),
      };

      const ec = await subtle.importKey("pkcs8", bytes(input.ecPkcs8), { name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
      const ecPub = await subtle.importKey("raw", bytes(input.ecRaw), { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
      const ecSig = await subtle.sign({ name: "ECDSA", hash: "SHA-384" }, ec, data);
      out.ec = {
        sigLength: ecSig.byteLength, ok: await subtle.verify({ name: "ECDSA", hash: "SHA-384" }, ecPub, ecSig, data),
        wrongHash: await subtle.verify({ name: "ECDSA", hash: "SHA-256" }, ecPub, ecSig, data),
        jwk: await subtle.exportKey("jwk", ec), pubJwk: await subtle.exportKey("jwk", ecPub), raw: hex(await subtle.exportKey("raw", ecPub)),
        spki: hex(await subtle.exportKey("spki", ecPub)), alg: ec.algorithm, usages: [ec.usages, ecPub.usages, ecPub.extractable],
      };
      const ed = await subtle.importKey("pkcs8", bytes(input.edPkcs8), "Ed25519", true, ["sign"]);
      const edPub = await subtle.importKey("spki", bytes(input.edSpki), { name: "Ed25519" }, true, ["verify"]);
      const edSig = await subtle.sign("Ed25519", ed, data);
      const edFromJwk = await subtle.importKey("jwk", await subtle.exportKey("jwk", edPub), "Ed25519", true, ["verify"]);
      out.ed = {
        sig: hex(edSig), ok: await subtle.verify("Ed25519", edFromJwk, edSig, data), jwk: await subtle.exportKey("jwk", ed),
        raw: hex(await subtle.exportKey("raw", edPub)), alg: ed.algorithm,
      };

      const flipped = new Uint8Array(gcm96); flipped[3] ^= 1;
      out.errors = {
        nonExtractable: await caught(() => subtle.exportKey("raw", cbcKey)),
        nonExtractableJwk: await caught(() => subtle.exportKey("jwk", signOnly)),
        wrongUsage: await caught(() => subtle.verify("HMAC", signOnly, mac, data)),
        wrongAlgorithm: await caught(() => subtle.encrypt({ name: "AES-CBC", iv: new Uint8Array(16) }, aesKey, data)),
        tampered: await caught(() => subtle.decrypt({ name: "AES-GCM", iv, tagLength: 96 }, aesKey, flipped)),
        wrongAad: await caught(() => subtle.decrypt({ name: "AES-GCM", iv }, aesKey, gcm)),
        unknown: await caught(() => subtle.digest("MD5", data)),
        badAesLength: await caught(() => subtle.importKey("raw", new Uint8Array(10), "AES-GCM", true, ["encrypt"])),
        badUsage: await caught(() => subtle.importKey("raw", new Uint8Array(16), "AES-GCM", true, ["sign"])),
        emptyUsages: await caught(() => subtle.importKey("raw", new Uint8Array(16), "AES-GCM", true, [])),
        pbkdf2Extractable: await caught(() => subtle.importKey("raw", new Uint8Array(4), "PBKDF2", true, ["deriveBits"])),
        badPkcs8: await caught(() => subtle.importKey("pkcs8", new Uint8Array(20), { name: "ECDSA", namedCurve: "P-256" }, true, ["sign"])),
        curveMismatch: await caught(() => subtle.importKey("pkcs8", bytes(input.ecPkcs8), { name: "ECDSA", namedCurve: "P-384" }, true, ["sign"])),
        spkiOfPrivate: await caught(() => subtle.exportKey("spki", ec)),
        cbcIv: await caught(() => subtle.encrypt({ name: "AES-CBC", iv: new Uint8Array(8) }, cbcKey, data)),
        missing: await caught(() => subtle.digest("SHA-256")),
        notKey: await caught(() => subtle.sign("HMAC", {}, data)),
        jwkAlg: await caught(() => subtle.importKey("jwk", out.rsa.pubJwk, { name: "RSA-PSS", hash: "SHA-384" }, true, ["verify"])),
        jwkAlgHash: await caught(() => subtle.importKey("jwk", out.rsa.pubJwk, { name: "RSA-PSS", hash: "SHA-256" }, true, ["verify"])),
        jwkExt: await caught(() => subtle.importKey("jwk", { ...out.hmac.jwk, ext: false }, { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
        cbcPadding: await caught(() => subtle.decrypt({ name: "AES-CBC", iv: bytes(input.iv16) }, cbcKey, new Uint8Array(16))),
        gcmTag: await caught(() => subtle.encrypt({ name: "AES-GCM", iv, tagLength: 100 }, aesKey, data)),
        construct: await caught(() => new CryptoKey()),
      };
      return out;`;
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the probe is the test's own text, run by Node as the reference
    const fromNode = (await new Function("subtle", "input", `return (async () => { ${probe} })();`)(subtle, input)) as Record<string, any>;
    const e = await run(
      `export default { name: "subtle-probe", version: "1", async run(event) {
         const subtle = crypto.subtle, input = event;
         this.$emit(await (async () => { ${probe} })());
       } };`,
      input,
    );
    // The probe checks something: Node's answers hold what the test means them to.
    expect(fromNode.digests["SHA-256"]).to.equal(crypto.createHash("sha256").update("payload: héllo").digest("hex"));
    expect(fromNode.rsa.oaep).to.equal("oaep secret");
    expect(fromNode.aes.ctrBack).to.equal("00".repeat(80));
    expect(fromNode.aes.ctr).not.to.equal(fromNode.aes.ctr64);
    // Node 20 names this one InvalidAccessException, a slip of its own (WebCrypto says InvalidAccessError,
    // as later Node versions do); the sandbox follows the standard.
    expect(fromNode.errors.nonExtractable).to.equal("InvalidAccessException");
    fromNode.errors.nonExtractable = fromNode.errors.nonExtractableJwk = "InvalidAccessError";
    expect(fromNode.errors.tampered).to.equal("OperationError");
    for (const part of Object.keys(fromNode)) expect(e[part], part).to.deep.equal(fromNode[part]);
  });
});
