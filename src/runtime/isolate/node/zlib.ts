// Node's `zlib`: browserify-zlib (Node's zlib API over pako, a JavaScript port of zlib). Brotli
// has no JavaScript port that fits the sandbox: its functions throw a clear error.
import zlib from "browserify-zlib";

function brotliUnavailable(name: string) {
  return () => {
    throw Object.assign(new Error(`zlib.${name}: Brotli is not available in the sandbox (gzip and deflate are)`), {
      code: "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM",
    });
  };
}

const base = zlib as unknown as Record<string, unknown>;
const constants: Record<string, number> = {};
for (const key of Object.keys(base)) if (/^Z_/.test(key) && typeof base[key] === "number") constants[key] = base[key];

const brotli: Record<string, unknown> = {};
for (const name of [
  "createBrotliCompress",
  "createBrotliDecompress",
  "brotliCompress",
  "brotliCompressSync",
  "brotliDecompress",
  "brotliDecompressSync",
])
  brotli[name] = brotliUnavailable(name);

export default Object.assign({}, base, brotli, { constants: Object.freeze(constants) });
