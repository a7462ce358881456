import { build, stop } from "esbuild";
import { fileURLToPath } from "node:url";

/** Bundles under way: esbuild's service process is stopped (and reaped) when the last one ends. */
let bundling = 0;

/**
 * Bundles a TypeScript worker entry and the project files it imports into one
 * ES module, as a `data:` URL a worker can run without tsx's loader (a worker
 * that registers tsx itself holds ~110 MB more: the loader's own thread). The
 * packages it imports stay imports, by absolute URL, since a `data:` module has
 * no `node_modules` to resolve bare names from.
 */
export async function bundleWorkerModule(entry: URL): Promise<URL> {
  bundling++;
  let result;
  try {
    result = await build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      packages: "external",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
  } finally {
    if (--bundling === 0) void stop();
  }
  let code = result.outputFiles[0].text;
  const output = Object.values(result.metafile.outputs)[0];
  for (const path of new Set(output.imports.map((imported) => imported.path))) {
    if (path.startsWith("node:")) continue;
    const bare = JSON.stringify(path);
    const rewritten = code.replaceAll(`from ${bare}`, `from ${JSON.stringify(import.meta.resolve(path))}`);
    if (rewritten === code) throw new Error(`Bundling the worker ${entry.pathname}: its import of ${path} is not a static import.`);
    code = rewritten;
  }
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}
