// WebCrypto's crypto.subtle in the sandbox, against Node's own webcrypto on the host: the same probe
// runs in both and must answer the same, keys made in the sandbox work on the host and the other
// way, non-extractable keys stay unreadable, the host's work is bounded, and jose 6 (whose only
// build is the web one) signs and verifies. Real isolates; jose from the registry.
import { expect } from "chai";
import crypto, { type webcrypto } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
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
        missingWords: await subtle.sign("HMAC").catch((err) => [err.name, err.code, err.message]),
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

  it("keys made in the sandbox work on the host and the host's in the sandbox: signatures, AES-GCM, RSA-OAEP, ECDH, wrapped keys; tampering is refused", async () => {
    const data = Buffer.from("signed both ways: héllo");
    const rsaParams = { modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) };
    const host = {
      rs: await subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", ...rsaParams, hash: "SHA-256" }, true, ["sign", "verify"]),
      ps: await subtle.generateKey({ name: "RSA-PSS", ...rsaParams, hash: "SHA-384" }, true, ["sign", "verify"]),
      es256: await subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]),
      es521: await subtle.generateKey({ name: "ECDSA", namedCurve: "P-521" }, true, ["sign", "verify"]),
      ed: (await subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair,
    };
    const params: Record<string, webcrypto.AlgorithmIdentifier | webcrypto.RsaPssParams | webcrypto.EcdsaParams> = {
      rs: "RSASSA-PKCS1-v1_5",
      ps: { name: "RSA-PSS", saltLength: 32 },
      es256: { name: "ECDSA", hash: "SHA-256" },
      es521: { name: "ECDSA", hash: "SHA-512" },
      ed: "Ed25519",
    };
    const hostSigned: Record<string, { spki: string; sig: string; algorithm: unknown }> = {};
    for (const [k, pair] of Object.entries(host))
      hostSigned[k] = {
        spki: hex(await subtle.exportKey("spki", pair.publicKey)),
        sig: hex(await subtle.sign(params[k], pair.privateKey, data)),
        algorithm: pair.publicKey.algorithm,
      };
    const aesRaw = crypto.randomBytes(32);
    const aesKey = await subtle.importKey("raw", aesRaw, "AES-GCM", true, ["encrypt", "decrypt", "wrapKey", "unwrapKey"]);
    const iv = crypto.randomBytes(12);
    const hostCipher = await subtle.encrypt({ name: "AES-GCM", iv }, aesKey, Buffer.from("from the host"));
    const oaep = await subtle.generateKey({ name: "RSA-OAEP", ...rsaParams, hash: "SHA-256" }, true, ["encrypt", "decrypt"]);
    const ecdh = await subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);

    const e = await run(
      `import nodeCrypto from "node:crypto";
       export default { name: "subtle-interop", version: "1", async run(event) {
         const { subtle } = nodeCrypto.webcrypto;
         const hex = (b) => Buffer.from(b).toString("hex");
         const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));
         const data = new TextEncoder().encode(event.data);
         const rsa = { modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) };
         const algorithms = {
           rs: [{ name: "RSASSA-PKCS1-v1_5", ...rsa, hash: "SHA-256" }, "RSASSA-PKCS1-v1_5"],
           ps: [{ name: "RSA-PSS", ...rsa, hash: "SHA-384" }, { name: "RSA-PSS", saltLength: 32 }],
           es256: [{ name: "ECDSA", namedCurve: "P-256" }, { name: "ECDSA", hash: "SHA-256" }],
           es521: [{ name: "ECDSA", namedCurve: "P-521" }, { name: "ECDSA", hash: "SHA-512" }],
           ed: [{ name: "Ed25519" }, "Ed25519"],
         };
         const signed = {}, verified = {};
         for (const [k, [algorithm, params]] of Object.entries(algorithms)) {
           const pair = await subtle.generateKey(algorithm, k === "ps", ["sign", "verify"]);
           const alg = { ...pair.privateKey.algorithm };
           if (alg.publicExponent) alg.publicExponent = hex(alg.publicExponent);
           signed[k] = {
             spki: hex(await subtle.exportKey("spki", pair.publicKey)), sig: hex(await subtle.sign(params, pair.privateKey, data)),
             alg, usages: [pair.publicKey.usages, pair.privateKey.usages], extractable: [pair.publicKey.extractable, pair.privateKey.extractable],
             types: [pair.publicKey.type, pair.privateKey.type],
           };
           const theirs = event.hostSigned[k];
           const key = await subtle.importKey("spki", bytes(theirs.spki), theirs.algorithm, false, ["verify"]);
           const tampered = bytes(theirs.sig); tampered[5] ^= 1;
           verified[k] = [await subtle.verify(params, key, bytes(theirs.sig), data), await subtle.verify(params, key, tampered, data)];
         }
         const hmac = await subtle.generateKey({ name: "HMAC", hash: "SHA-512" }, true, ["sign", "verify"]);
         const aes = await subtle.generateKey({ name: "AES-GCM", length: 256 }, true, ["encrypt", "decrypt"]);
         const iv = crypto.getRandomValues(new Uint8Array(12));
         const hostAes = await subtle.importKey("raw", bytes(event.aes), "AES-GCM", false, ["decrypt", "wrapKey"]);
         const tampered = bytes(event.hostCipher); tampered[0] ^= 1;
         let refused;
         try { await subtle.decrypt({ name: "AES-GCM", iv: bytes(event.iv) }, hostAes, tampered); } catch (err) { refused = [err.name, err instanceof DOMException]; }
         const oaep = await subtle.importKey("jwk", event.oaepPublic, { name: "RSA-OAEP", hash: "SHA-256" }, false, ["encrypt"]);
         const ecdh = await subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
         const hostEcdh = await subtle.importKey("raw", bytes(event.ecdhPublic), { name: "ECDH", namedCurve: "P-256" }, true, []);
         const wrapIv = crypto.getRandomValues(new Uint8Array(12));
         this.$emit({
           signed, verified,
           hmac: { jwk: await subtle.exportKey("jwk", hmac), mac: hex(await subtle.sign("HMAC", hmac, data)), alg: hmac.algorithm },
           aes: { raw: hex(await subtle.exportKey("raw", aes)), iv: hex(iv), cipher: hex(await subtle.encrypt({ name: "AES-GCM", iv }, aes, data)), alg: aes.algorithm },
           fromHost: new TextDecoder().decode(await subtle.decrypt({ name: "AES-GCM", iv: bytes(event.iv) }, hostAes, bytes(event.hostCipher))),
           refused,
           oaep: hex(await subtle.encrypt({ name: "RSA-OAEP" }, oaep, new TextEncoder().encode("to the host"))),
           ecdh: { public: hex(await subtle.exportKey("raw", ecdh.publicKey)), bits: hex(await subtle.deriveBits({ name: "ECDH", public: hostEcdh }, ecdh.privateKey, 256)) },
           wrapped: { iv: hex(wrapIv), jwk: hex(await subtle.wrapKey("jwk", hmac, hostAes, { name: "AES-GCM", iv: wrapIv })) },
         });
       } };`,
      {
        data: data.toString(),
        hostSigned,
        aes: aesRaw.toString("hex"),
        iv: iv.toString("hex"),
        hostCipher: hex(hostCipher),
        oaepPublic: await subtle.exportKey("jwk", oaep.publicKey),
        ecdhPublic: hex(await subtle.exportKey("raw", ecdh.publicKey)),
      },
    );
    const bytes = (h: string) => Buffer.from(h, "hex");
    expect(e.verified).to.deep.equal({
      rs: [true, false],
      ps: [true, false],
      es256: [true, false],
      es521: [true, false],
      ed: [true, false],
    });
    for (const [k, s] of Object.entries<any>(e.signed)) {
      const algorithm = { ...s.alg, ...(s.alg.publicExponent ? { publicExponent: bytes(s.alg.publicExponent) } : {}) };
      const key = await subtle.importKey("spki", bytes(s.spki), algorithm, true, ["verify"]);
      expect(await subtle.verify(params[k], key, bytes(s.sig), data), k).to.equal(true);
      expect(s.types).to.deep.equal(["public", "private"]);
      expect(s.usages).to.deep.equal([["verify"], ["sign"]]);
      expect(s.extractable).to.deep.equal([true, k === "ps"]);
    }
    expect(e.signed.rs.alg).to.deep.equal({
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: "010001",
      hash: { name: "SHA-256" },
    });
    expect(e.signed.es521.alg).to.deep.equal({ name: "ECDSA", namedCurve: "P-521" });
    // The sandbox's HMAC and AES keys, exported, are keys Node uses to the same effect.
    const hmac = await subtle.importKey("jwk", e.hmac.jwk, { name: "HMAC", hash: "SHA-512" }, false, ["sign"]);
    expect(hex(await subtle.sign("HMAC", hmac, data))).to.equal(e.hmac.mac);
    expect(e.hmac.alg).to.deep.equal({ name: "HMAC", length: 1024, hash: { name: "SHA-512" } });
    expect(e.hmac.jwk).to.include({ kty: "oct", alg: "HS512", ext: true });
    const aes = await subtle.importKey("raw", bytes(e.aes.raw), "AES-GCM", false, ["decrypt"]);
    expect(Buffer.from(await subtle.decrypt({ name: "AES-GCM", iv: bytes(e.aes.iv) }, aes, bytes(e.aes.cipher))).toString()).to.equal(
      data.toString(),
    );
    expect(e.aes.alg).to.deep.equal({ name: "AES-GCM", length: 256 });
    expect(e.fromHost).to.equal("from the host");
    expect(e.refused).to.deep.equal(["OperationError", true]);
    expect(Buffer.from(await subtle.decrypt({ name: "RSA-OAEP" }, oaep.privateKey, bytes(e.oaep))).toString()).to.equal("to the host");
    const sandboxEcdh = await subtle.importKey("raw", bytes(e.ecdh.public), { name: "ECDH", namedCurve: "P-256" }, true, []);
    expect(hex(await subtle.deriveBits({ name: "ECDH", public: sandboxEcdh }, ecdh.privateKey, 256))).to.equal(e.ecdh.bits);
    // The HMAC key wrapped (as a JWK under AES-GCM) in the sandbox unwraps on the host to the same key.
    const unwrapped = await subtle.unwrapKey(
      "jwk",
      bytes(e.wrapped.jwk),
      aesKey,
      { name: "AES-GCM", iv: bytes(e.wrapped.iv) },
      { name: "HMAC", hash: "SHA-512" },
      false,
      ["sign"],
    );
    expect(hex(await subtle.sign("HMAC", unwrapped, data))).to.equal(e.hmac.mac);
  });

  it("CryptoKey and SubtleCrypto are where Node has them; a key's material is out of reach, even of replaced built-ins", async () => {
    const secret = "top secret key!!";
    const expectedMac = crypto.createHmac("sha256", "verify-only key").update("data").digest("hex");
    const derivedHex = crypto.pbkdf2Sync("pw", Buffer.alloc(4), 5, 32, "sha256").toString("hex");
    const e = await run(
      `import nodeCrypto from "node:crypto";
       import util from "node:util";
       export default { name: "subtle-hidden", version: "1", async run() {
         const caught = async (f) => { try { await f(); return "no error"; } catch (err) { return err.name + ": " + err.message; } };
         const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(${JSON.stringify(secret)}), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
         const aes = await crypto.subtle.generateKey({ name: "AES-GCM", length: 128 }, false, ["encrypt", "wrapKey", "unwrapKey"]);
         // A key wrapped before the built-ins are replaced, unwrapped after: its bytes must not show either.
         const inner = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, true, ["sign"]);
         const innerHex = Buffer.from(await crypto.subtle.exportKey("raw", inner)).toString("hex");
         const wrapParams = { name: "AES-GCM", iv: new Uint8Array(12) };
         const wrappedRaw = await crypto.subtle.wrapKey("raw", inner, aes, wrapParams);
         const wrappedJwk = await crypto.subtle.wrapKey("jwk", inner, aes, wrapParams);
         const pw = await crypto.subtle.importKey("raw", new TextEncoder().encode("pw"), "PBKDF2", false, ["deriveKey"]);
         // A verify-only key: the MAC it expects would let the component sign with it.
         const verifier = await crypto.subtle.importKey("raw", new TextEncoder().encode("verify-only key"), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
         const places = {
           subtle: [crypto.subtle === nodeCrypto.subtle, crypto.subtle === nodeCrypto.webcrypto.subtle, globalThis.crypto === nodeCrypto.webcrypto, crypto.subtle instanceof SubtleCrypto],
           classes: [typeof CryptoKey, CryptoKey.name, SubtleCrypto.name, key instanceof CryptoKey, nodeCrypto.webcrypto.CryptoKey === CryptoKey, util.types.isCryptoKey(key)],
           tags: [Object.prototype.toString.call(key), Object.prototype.toString.call(crypto.subtle)],
           construct: [await caught(() => new CryptoKey()), await caught(() => new SubtleCrypto())],
         };
         // Every built-in the implementation could hand the material to reports what it is given.
         const seen = [];
         const hex = (v) => { try { return Array.from(new Uint8Array(v.buffer ?? v, v.byteOffset ?? 0, v.byteLength), (x) => x.toString(16).padStart(2, "0")).join(""); } catch { return ""; } };
         let busy = false;
         const report = (...vs) => {
           if (busy) return;
           busy = true;
           for (const v of vs) if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) seen.push(hex(v));
           busy = false;
         };
         const TypedArray = Object.getPrototypeOf(Uint8Array.prototype);
         for (const name of ["set", "slice", "subarray", "fill", "map", "forEach", "values", Symbol.iterator]) {
           const original = TypedArray[name];
           TypedArray[name] = function (...args) { report(this, ...args); return original.apply(this, args); };
         }
         for (const name of ["slice"]) { const original = ArrayBuffer.prototype[name]; ArrayBuffer.prototype[name] = function (...args) { report(this); return original.apply(this, args); }; }
         for (const name of ["buffer", "byteLength", "byteOffset", "length"]) {
           const get = Object.getOwnPropertyDescriptor(TypedArray, name).get;
           Object.defineProperty(TypedArray, name, { get() { report(this); return get.call(this); }, configurable: true });
         }
         const isView = ArrayBuffer.isView;
         ArrayBuffer.isView = function (v) { report(v); return isView(v); };
         const hooked = ["secret", "der", "material", "key", "bytes", "data", "raw", "handle", "k", "d", "use", "alg", "key_ops", "ext", "toJSON"];
         for (const name of hooked)
           Object.defineProperty(Object.prototype, name, { get() { report(this); seen.push("read " + name); return undefined; }, set(v) { report(v); }, configurable: true });
         const BufferFrom = Buffer.from;
         Buffer.from = function (...args) { report(...args); return BufferFrom.apply(this, args); };
         const stringify = JSON.stringify;
         JSON.stringify = function (...args) { seen.push(stringify(args[0])); return stringify.apply(this, args); };
         const data = new TextEncoder().encode("data");
         const used = {
           sign: (await crypto.subtle.sign("HMAC", key, data)).byteLength,
           verify: await crypto.subtle.verify("HMAC", verifier, new Uint8Array(32), data),
           export: await caught(() => crypto.subtle.exportKey("raw", key)),
           exportJwk: await caught(() => crypto.subtle.exportKey("jwk", key)),
           wrap: await caught(() => crypto.subtle.wrapKey("raw", key, aes, { name: "AES-GCM", iv: new Uint8Array(12) })),
         };
         const hmac = { name: "HMAC", hash: "SHA-256" };
         const unwrapped = [
           await crypto.subtle.unwrapKey("raw", wrappedRaw, aes, wrapParams, hmac, false, ["sign"]),
           await crypto.subtle.unwrapKey("jwk", wrappedJwk, aes, wrapParams, hmac, false, ["sign"]),
         ];
         const derived = await crypto.subtle.deriveKey({ name: "PBKDF2", hash: "SHA-256", salt: new Uint8Array(4), iterations: 5 }, pw, { ...hmac, length: 256 }, false, ["sign"]);
         const macs = [];
         for (const k of [...unwrapped, inner, derived]) macs.push(Buffer.from(await crypto.subtle.sign("HMAC", k, data)).toString("hex"));
         for (const name of hooked) delete Object.prototype[name];
         JSON.stringify = stringify;
         this.$emit({
           places, used,
           // What the replaced built-ins saw of the key: nothing, though they saw other bytes.
           leaks: seen.filter((s) => [${JSON.stringify(Buffer.from(secret).toString("hex"))}, innerHex, ${JSON.stringify(derivedHex)}, ${JSON.stringify(expectedMac)}].some((h) => s.includes(h)) || s.startsWith("read ")),
           macs,
           watched: seen.length > 0,
           hidden: [Reflect.ownKeys(key).length, JSON.stringify(key), Object.keys(Object.getOwnPropertyDescriptors(CryptoKey.prototype)).sort()],
           described: [key.type, key.extractable, key.algorithm, key.usages],
         });
       } };`,
    );
    expect(e.places).to.deep.equal({
      subtle: [true, true, true, true],
      classes: ["function", "CryptoKey", "SubtleCrypto", true, true, true],
      tags: ["[object CryptoKey]", "[object SubtleCrypto]"],
      construct: ["TypeError: Illegal constructor", "TypeError: Illegal constructor"],
    });
    expect(e.used.sign).to.equal(32);
    expect(e.used.verify).to.equal(false);
    expect(e.used.export).to.equal("InvalidAccessError: key is not extractable");
    expect(e.used.exportJwk).to.equal(e.used.export);
    expect(e.used.wrap).to.equal(e.used.export);
    expect(e.leaks).to.deep.equal([]);
    // The unwrapped keys are the wrapped one; the derived key is PBKDF2's bits.
    expect(e.macs[0]).to.equal(e.macs[2]);
    expect(e.macs[1]).to.equal(e.macs[2]);
    expect(e.macs[3]).to.equal(crypto.createHmac("sha256", Buffer.from(derivedHex, "hex")).update("data").digest("hex"));
    expect(e.watched).to.equal(true);
    expect(e.hidden).to.deep.equal([0, "{}", ["algorithm", "constructor", "extractable", "type", "usages"]]);
    expect(e.described).to.deep.equal(["secret", false, { name: "HMAC", length: 128, hash: { name: "SHA-256" } }, ["sign"]]);
  });

  it("jose 6 (its one build is WebCrypto's) signs and verifies JWTs and encrypts a JWE in the sandbox, as jose on the host reads them", async () => {
    const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
    const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = (k: crypto.KeyObject) => k.export({ format: "pem", type: k.type === "private" ? "pkcs8" : "spki" }) as string;
    const secret = crypto.randomBytes(32);
    const cek = crypto.randomBytes(32);
    const prepared = await prepareCode(
      runtime,
      `import * as jose from "jose@6.2.18";
       export default { name: "jose", version: "1", async run(event) {
         const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));
         const es = await jose.importPKCS8(event.ecPrivate, "ES256");
         const es256 = await new jose.SignJWT({ sub: "svc" }).setProtectedHeader({ alg: "ES256" }).setIssuedAt(1700000000).sign(es);
         const hs256 = await new jose.SignJWT({ a: 1 }).setProtectedHeader({ alg: "HS256" }).setIssuedAt(1700000000).sign(bytes(event.secret));
         const ed = await jose.generateKeyPair("EdDSA");
         const eddsa = await new jose.SignJWT({ ed: true }).setProtectedHeader({ alg: "EdDSA" }).sign(ed.privateKey);
         const rsaPublic = await jose.importSPKI(event.rsaPublic, "RS256");
         const fromHost = (await jose.jwtVerify(event.hostToken, rsaPublic)).payload;
         let tampered;
         try { await jose.jwtVerify(event.hostToken.slice(0, -6) + "AAAAAA", rsaPublic); } catch (err) { tampered = err.code; }
         const jwe = await new jose.CompactEncrypt(new TextEncoder().encode("sealed in the sandbox")).setProtectedHeader({ alg: "dir", enc: "A256GCM" }).encrypt(bytes(event.cek));
         const opened = new TextDecoder().decode((await jose.compactDecrypt(event.hostJwe, bytes(event.cek))).plaintext);
         this.$emit({ es256, hs256, eddsa, edJwk: await jose.exportJWK(ed.publicKey), fromHost, tampered, jwe, opened, isCryptoKey: es instanceof CryptoKey });
       } };`,
    );
    expect(prepared.packages).to.deep.equal([{ name: "jose", version: "6.2.18" }]);
    // The reference: the same jose, from the cache, run by Node.
    const index = JSON.parse(await fs.readFile(path.join(cacheDir, "npm", "index", "jose.json"), "utf8")) as {
      versions: Record<string, string>;
    };
    const root = path.join(cacheDir, "npm", "store", index.versions["6.2.18"], "node_modules", "jose");
    const pkg = JSON.parse(await fs.readFile(path.join(root, "package.json"), "utf8")) as { exports: { ".": { default: string } } };
    // jose 6 has no Node build: whatever the bundler's conditions, it is the WebCrypto one.
    expect(pkg.exports["."].default).to.equal("./dist/webapi/index.js");
    type Jose = {
      SignJWT: new (payload: object) => {
        setProtectedHeader(h: object): { setIssuedAt(t: number): { sign(k: unknown): Promise<string> }; sign(k: unknown): Promise<string> };
      };
      CompactEncrypt: new (plaintext: Uint8Array) => { setProtectedHeader(h: object): { encrypt(k: unknown): Promise<string> } };
      jwtVerify(token: string, key: unknown): Promise<{ payload: object }>;
      compactDecrypt(jwe: string, key: unknown): Promise<{ plaintext: Uint8Array }>;
      importJWK(jwk: object, alg: string): Promise<unknown>;
    };
    const jose = (await import(pathToFileURL(path.join(root, pkg.exports["."].default)).href)) as Jose;
    const hostToken = await new jose.SignJWT({ from: "host" }).setProtectedHeader({ alg: "RS256" }).sign(rsa.privateKey);
    const hostJwe = await new jose.CompactEncrypt(Buffer.from("sealed on the host"))
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .encrypt(cek);
    const outcome = await runtime.invoke(
      invocation(prepared, {
        event: {
          ecPrivate: pem(ec.privateKey),
          rsaPublic: pem(rsa.publicKey),
          secret: secret.toString("hex"),
          cek: cek.toString("hex"),
          hostToken,
          hostJwe,
        },
      }),
    );
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    const e = outcome.emits[0]?.event as any;
    expect((await jose.jwtVerify(e.es256, ec.publicKey)).payload).to.deep.equal({ sub: "svc", iat: 1700000000 });
    // HS256 is deterministic: the very token jose makes on the host.
    expect(e.hs256).to.equal(await new jose.SignJWT({ a: 1 }).setProtectedHeader({ alg: "HS256" }).setIssuedAt(1700000000).sign(secret));
    expect((await jose.jwtVerify(e.eddsa, await jose.importJWK(e.edJwk, "EdDSA"))).payload).to.deep.equal({ ed: true });
    expect(e.fromHost).to.deep.equal({ from: "host" });
    expect(e.tampered).to.equal("ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
    expect(Buffer.from((await jose.compactDecrypt(e.jwe, cek)).plaintext).toString()).to.equal("sealed in the sandbox");
    expect(e.opened).to.equal("sealed on the host");
    expect(e.isCryptoKey).to.equal(true);
  });

  it("bounds the host's work (PBKDF2 iterations and rounds, RSA moduli, data) with OperationError, and the isolate goes on", async () => {
    const e = await run(
      `export default { name: "subtle-bounds", version: "1", async run() {
         const { subtle } = crypto;
         const caught = async (f) => { try { await f(); return "no error"; } catch (err) { return { name: err.name, message: err.message }; } };
         const pw = await subtle.importKey("raw", new TextEncoder().encode("pw"), "PBKDF2", false, ["deriveBits"]);
         const pbkdf2 = (iterations, bits) => subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: new Uint8Array(8), iterations }, pw, bits);
         const big = new Uint8Array(64 * 1024 * 1024 + 1);
         const refused = {
           iterations: await caught(() => pbkdf2(1_000_001, 256)),
           rounds: await caught(() => pbkdf2(1_000_000, 768)),
           modulus: await caught(() => subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", modulusLength: 8192, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign"])),
           data: await caught(() => subtle.digest("SHA-256", big)),
           hmacKey: await caught(() => subtle.importKey("raw", new Uint8Array(65 * 1024), { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
         };
         this.$emit({ refused, after: Buffer.from(await pbkdf2(2, 128)).toString("hex") });
       } };`,
    );
    expect(e.refused.iterations).to.deep.equal({
      name: "OperationError",
      message: "The iteration count is 1000001; the Headwater sandbox takes 1 to 1000000 (host-side work is bounded)",
    });
    expect(e.refused.rounds.name).to.equal("OperationError");
    expect(e.refused.rounds.message).to.match(/3000000 rounds; the Headwater sandbox takes at most 2000000/);
    expect(e.refused.modulus.name).to.equal("OperationError");
    expect(e.refused.modulus.message).to.match(/8192; the Headwater sandbox takes 512 to 4096/);
    expect(e.refused.data).to.deep.equal({
      name: "OperationError",
      message: "The data is 67108865 bytes; the Headwater sandbox takes at most 67108864 bytes (host-side work is bounded)",
    });
    expect(e.refused.hmacKey.message).to.match(/keyData is 66560 bytes.*at most 65536/);
    expect(e.after).to.equal(crypto.pbkdf2Sync("pw", Buffer.alloc(8), 2, 16, "sha256").toString("hex"));
  });
});
