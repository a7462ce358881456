/**
 * Ends the process over a mistake found before there is a logger (a bad
 * environment variable): one line on stderr naming it, exit code 1, no stack.
 */
export function exitWithError(error: unknown): never {
  process.stderr.write(`switchboard: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
