#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so `npm start` needs no
// build step and the intern host can spawn the bundled agent the same way.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
