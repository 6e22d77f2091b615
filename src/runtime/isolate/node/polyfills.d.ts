// The npm polyfills this folder builds on ship no types of their own; Node's types describe them.
declare module "readable-stream/lib/stream.js" {
  import Stream from "node:stream";
  export default Stream;
}
declare module "browserify-zlib" {
  import zlib from "node:zlib";
  export default zlib;
}
declare module "assert/" {
  import assert from "node:assert";
  export default assert;
}
