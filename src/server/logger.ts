import { pino, type Logger } from "pino";

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
  return destination ? pino(options, destination) : pino(options);
}
