import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openEmbeddedBus } from "../../src/bus/embedded/index.js";
import { describeBusContract } from "./contract.js";

describeBusContract(
  "embedded SQLite log",
  async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "headwater-bus-"));
    const file = path.join(dir, "bus.sqlite");
    return {
      open: (options) => openEmbeddedBus({ file, ...options }),
      dispose: () => rm(dir, { recursive: true, force: true }),
    };
  },
  { timeoutMs: 30_000 },
);
