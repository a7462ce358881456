import { createRequire } from "node:module";
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

const mainPath = fileURLToPath(new URL("./main.ts", import.meta.url));

/**
 * The `--agent` command line that runs the bundled reference agent: this Node
 * with tsx's loader (by absolute URL, since the agent's working directory need
 * not hold node_modules). The embedded server's `demo` intern uses it too.
 */
export function referenceAgentCommand(options: ReferenceAgentCommandOptions = {}): string {
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const argv = [process.execPath, "--import", tsxLoader, mainPath];
  if (options.bubblewrap !== undefined) argv.push("--bubblewrap", options.bubblewrap);
  if (options.sandboxOnly) argv.push("--sandbox-only");
  for (const dir of options.hide ?? []) argv.push("--hide", dir);
  return argv.map(quote).join(" ");
}

function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
