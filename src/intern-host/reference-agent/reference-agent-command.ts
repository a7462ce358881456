import { createRequire } from "node:module";
import { extname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Options for {@link referenceAgentCommand}. */
export interface ReferenceAgentCommandOptions {
  /** bwrap to sandbox manual-mode commands with; default: found on PATH. A path that does not exist shows the refusal. */
  bubblewrap?: string;
  /** Every command sandboxed, in every mode, with no escape (`--sandbox-only`). */
  sandboxOnly?: boolean;
  /** Directories the sandbox shows empty (`--hide`). */
  hide?: readonly string[];
}

// Compiled (dist/) beside compiled code, TypeScript beside the sources.
const fromSources = extname(fileURLToPath(import.meta.url)) === ".ts";
const mainPath = fileURLToPath(new URL(fromSources ? "./main.ts" : "./main.js", import.meta.url));

/**
 * The `--agent` command line that runs the bundled reference agent: this Node
 * on the compiled agent, or, run from the sources, with tsx's loader (by
 * absolute URL, since the agent's working directory need not hold
 * node_modules). The embedded server's `demo` intern uses it too.
 */
export function referenceAgentCommand(options: ReferenceAgentCommandOptions = {}): string {
  const loader = fromSources ? ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href] : [];
  const argv = [process.execPath, ...loader, mainPath];
  if (options.bubblewrap !== undefined) argv.push("--bubblewrap", options.bubblewrap);
  if (options.sandboxOnly) argv.push("--sandbox-only");
  for (const dir of options.hide ?? []) argv.push("--hide", dir);
  return argv.map(quote).join(" ");
}

function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
