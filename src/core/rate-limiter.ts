import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { Redis } from "ioredis";
import { catalogueError } from "./error-catalogue.js";

/** Options for {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** Distinguishes limiters sharing one Redis. */
  name: string;
  /** Requests allowed per window. */
  points: number;
  /** Window length in seconds. */
  durationSeconds: number;
  /** Shared counters across replicas; in memory when absent. */
  redis?: Redis;
}

/**
 * A fixed-window limiter per subject (the member a key acts as). Refusals are
 * the catalogue's 429 with the seconds until the window frees up.
 */
export function createRateLimiter(options: RateLimiterOptions) {
  const common = { keyPrefix: `switchboard:rl:${options.name}`, points: options.points, duration: options.durationSeconds };
  // When Redis is unreachable each replica falls back to counting in memory:
  // limits loosen by the number of replicas for a while, but turns keep working.
  const limiter: RateLimiterAbstract = options.redis
    ? new RateLimiterRedis({ ...common, storeClient: options.redis, useRedisPackage: false, insuranceLimiter: new RateLimiterMemory(common) })
    : new RateLimiterMemory(common);
  return {
    /** Counts one request for `subject`; throws 429 when over the limit. */
    async consume(subject: string): Promise<void> {
      try {
        await limiter.consume(subject);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          const retryAfterSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
          throw catalogueError("rate_limited", undefined, { retryAfterSeconds });
        }
        throw catalogueError("service_unavailable", "Rate limiting is unavailable.", { cause: rejection });
      }
    },
    /** Gives back one request counted for `subject` that turned out not to be one; best effort. */
    async refund(subject: string): Promise<void> {
      await limiter.reward(subject, 1).catch(() => undefined);
    },
  };
}

/** A rate limiter. */
export type RateLimiter = ReturnType<typeof createRateLimiter>;
