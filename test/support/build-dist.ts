import { execFileSync } from "node:child_process";
import { join } from "node:path";

/**
 * Vitest global setup: compiles src/ into dist/ before any test, since the
 * tests start servers the way operators do (bin/switchboard.js runs dist/).
 * A no-op when dist/ is current, so a single-file run stays quick.
 */
export default function buildDist(): void {
  execFileSync(process.execPath, [join(import.meta.dirname, "..", "..", "scripts", "build-dist.mjs")], { stdio: "inherit" });
}
