import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/**
 * The URL of a sibling module with the same extension as `importMetaUrl`, so
 * a worker entry resolves to `.ts` when run through tsx and to `.js` once
 * compiled.
 */
export function siblingModuleUrl(name: string, importMetaUrl: string): URL {
  return new URL(`./${name}${extname(fileURLToPath(importMetaUrl))}`, importMetaUrl);
}

/**
 * Starts a worker thread on an ES module. Node 20 does not carry the parent's
 * loader hooks into workers, so a TypeScript entry is reached through a tiny
 * bootstrap that registers tsx inside the worker first.
 */
export function startModuleWorker(moduleUrl: URL, workerData: unknown): Worker {
  if (extname(moduleUrl.pathname) !== ".ts") return new Worker(moduleUrl, { workerData });
  const tsx = import.meta.resolve("tsx/esm/api");
  const bootstrap = `import { register } from ${JSON.stringify(tsx)};\nregister();\nawait import(${JSON.stringify(moduleUrl.href)});\n`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), { workerData });
}
