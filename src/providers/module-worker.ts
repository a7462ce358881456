import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { bundleWorkerModule } from "./bundle-worker-module.js";

/**
 * The URL of a sibling module with the same extension as `importMetaUrl`, so
 * a worker entry resolves to `.ts` when run from sources and to `.js` once
 * compiled.
 */
export function siblingModuleUrl(name: string, importMetaUrl: string): URL {
  return new URL(`./${name}${extname(fileURLToPath(importMetaUrl))}`, importMetaUrl);
}

/** Each TypeScript entry is bundled once per process. */
const bundles = new Map<string, Promise<URL>>();

/** Imports the module whose URL arrives as the worker's first message. */
const loader = `require("node:worker_threads").parentPort.once("message", (url) => import(url));`;

/**
 * Starts a worker thread on an ES module. Node 20 does not carry the parent's
 * loader hooks into workers, so a TypeScript entry (run from sources: tsx,
 * vitest) starts on a one-line loader that imports the entry bundled into one
 * module (see {@link bundleWorkerModule}) once the bundle is ready. The worker's
 * first message is that module: post nothing to it before it has spoken.
 */
export function startModuleWorker(moduleUrl: URL, workerData?: unknown): Worker {
  if (extname(moduleUrl.pathname) !== ".ts") return new Worker(moduleUrl, { workerData });
  const worker = new Worker(loader, { eval: true, workerData });
  bundleOf(moduleUrl).then(
    (url) => worker.postMessage(url.href),
    (error: unknown) => worker.emit("error", error),
  );
  return worker;
}

/** The entry's bundle, built on first use; a failed one is forgotten, so the next worker tries again. */
function bundleOf(moduleUrl: URL): Promise<URL> {
  const known = bundles.get(moduleUrl.href);
  if (known !== undefined) return known;
  const bundle = bundleWorkerModule(moduleUrl);
  bundles.set(moduleUrl.href, bundle);
  bundle.catch(() => {
    if (bundles.get(moduleUrl.href) === bundle) bundles.delete(moduleUrl.href);
  });
  return bundle;
}
