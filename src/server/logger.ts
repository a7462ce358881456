import { pino, type Logger } from "pino";

/**
 * Standard output, written asynchronously: a synchronous write per line cost
 * each request a blocking syscall on the event loop. Lines logged while a
 * write is under way leave together in the next one, none waits for a batch
 * to fill, and pino flushes what is pending when the process exits.
 */
const asyncStdout = () => pino.destination({ dest: 1, sync: false });

/** The levels `LOG_LEVEL` may name: pino's own. */
export const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** Reads `LOG_LEVEL` (default `info`); anything but one of {@link logLevels} is refused by name. */
export function parseLogLevel(raw: string | undefined): string {
  if (raw === undefined || raw === "") return "info";
  if (!(logLevels as readonly string[]).includes(raw)) throw new Error(`LOG_LEVEL must be one of ${logLevels.join(", ")}, got ${JSON.stringify(raw)}.`);
  return raw;
}

/**
 * The process logger. Secrets never reach it: credentials are redacted
 * wherever a header object is logged, and no code logs bodies or prompts.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "*.token", "*.key", "*.adminToken", "*.hostToken"],
      censor: "[redacted]",
    },
  };
  return pino(options, destination ?? asyncStdout());
}
