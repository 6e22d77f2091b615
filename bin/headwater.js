#!/usr/bin/env -S node --no-node-snapshot
// The flag above is needed by isolated-vm on Node 20 (the runner lives in this process tree).
import "../dist/src/cli/main.js";
