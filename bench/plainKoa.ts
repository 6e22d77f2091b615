// The ceiling for bench/ingest.ts: a bare Koa process that reads the body and answers 200 with a
// small JSON, as a source endpoint does, but stores nothing. Prints "listening <port>".
import http from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import getRawBody from "raw-body";

const app = new Koa();
app.use(async (ctx) => {
  await getRawBody(ctx.req, { limit: 512 * 1024, length: ctx.request.length });
  ctx.body = { success: true, invocation_id: "inv_plainkoa0000000" };
});
const handle = app.callback();
const server = http.createServer((req, res) => void handle(req, res));
server.listen(0, "127.0.0.1", () => console.log(`listening ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
