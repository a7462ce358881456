import { Redis } from "ioredis";
import type { Logger } from "pino";

/**
 * How long a Redis command may go unanswered. Rate limits are the only use:
 * past this the request counts in memory instead, so a Redis that stops
 * answering (a partition, a frozen host) slows rate-limited requests by this
 * much rather than holding them forever.
 */
export const redisCommandTimeoutMs = 500;

/**
 * Connects to the shared Redis, or fails with a message naming its address
 * (never its password). Commands fail at once while the connection is down,
 * instead of queueing until it returns, and after {@link redisCommandTimeoutMs}
 * when it is up but silent; both fall back to in-memory counting.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: redisCommandTimeoutMs, connectTimeout: 5_000 });
  // ioredis reconnects by itself; without a listener each failed attempt would print a stack on stderr.
  let lastError: Error | undefined;
  redis.on("error", (error: Error) => {
    lastError = error;
    logger.warn({ err: error }, "Redis connection error; rate limits count in memory meanwhile");
  });
  await redis.connect().catch((error: Error) => {
    redis.disconnect();
    // The URL's host only: it may carry a password.
    throw new Error(`Redis at ${new URL(url).host} is unreachable: ${(lastError ?? error).message}`, { cause: error });
  });
  return redis;
}
