#!/usr/bin/env node
// Runs the compiled CLI from dist/ (`npm run build`; `npm start` and the test
// run build it first). A tree never built runs the TypeScript sources
// through tsx's loader instead, slower to start and heavier.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/main.js", import.meta.url);
if (existsSync(compiled)) {
  // Error stacks name the TypeScript files and lines; the maps are read only when a stack is formatted.
  process.setSourceMapsEnabled(true);
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
