#!/usr/bin/env node
// Compiles src/ into dist/, file by file (no bundling: every import stays as
// written, and `./x.js` finds the compiled sibling), so production runs plain
// JavaScript instead of transpiling through tsx at every start. Skipped when
// dist/ already holds a build of these exact sources; a new build replaces
// dist/ by rename, so a server starting meanwhile sees the old or the new one.
import { createHash } from "node:crypto";
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const src = join(root, "src");
const dist = join(root, "dist");
const stampFile = ".build-stamp";

const files = (await readdir(src, { recursive: true, withFileTypes: true }))
  .filter((entry) => entry.isFile())
  .map((entry) => join(entry.parentPath, entry.name))
  .sort();

// What the build depends on: every source file's path, size and mtime, and this script.
const fingerprint = createHash("sha256");
for (const file of [...files, fileURLToPath(import.meta.url)]) {
  const { size, mtimeMs } = await stat(file);
  fingerprint.update(`${relative(root, file)}\0${size}\0${mtimeMs}\n`);
}
const stamp = fingerprint.digest("hex");
if ((await readFile(join(dist, stampFile), "utf8").catch(() => "")) === stamp) process.exit(0);

const staging = `${dist}.${process.pid}`;
await build({
  entryPoints: files.filter((file) => file.endsWith(".ts")),
  outdir: staging,
  outbase: src,
  format: "esm",
  platform: "node",
  target: "node20",
  // Stack traces point at the TypeScript lines: bin/switchboard.js turns source maps on.
  sourcemap: true,
  logLevel: "warning",
});
for (const file of files.filter((file) => !file.endsWith(".ts"))) {
  const target = join(staging, relative(src, file));
  await mkdir(dirname(target), { recursive: true });
  await copyFile(file, target);
}
await writeFile(join(staging, stampFile), stamp);
const previous = `${dist}.old.${process.pid}`;
await rename(dist, previous).catch((error) => {
  if (error.code !== "ENOENT") throw error;
});
await rename(staging, dist);
await rm(previous, { recursive: true, force: true });
