import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { ConnectError } from "@connectrpc/connect";
import { createRateLimiter } from "../src/core/rate-limiter.js";
import { describeError } from "../src/core/error-catalogue.js";

const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
let a: Redis;
let b: Redis;

beforeAll(async () => {
  a = new Redis(redisUrl);
  b = new Redis(redisUrl);
});
afterAll(async () => {
  await a?.quit();
  await b?.quit();
});

async function refusal(call: Promise<void>) {
  return describeError(await call.then(() => undefined, (error: unknown) => ConnectError.from(error)));
}

describe("rate limits", () => {
  it("are shared through Redis: two replicas count the same member's turns together", async () => {
    const name = `test-${process.pid}-${Date.now()}`;
    const replicaA = createRateLimiter({ name, points: 3, durationSeconds: 60, redis: a });
    const replicaB = createRateLimiter({ name, points: 3, durationSeconds: 60, redis: b });
    await replicaA.consume("mem_1");
    await replicaB.consume("mem_1");
    await replicaA.consume("mem_1");
    const refused = await refusal(replicaB.consume("mem_1"));
    expect(refused).toMatchObject({ status: 429, reason: "rate_limited", retryable: true });
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    // Another member has a budget of its own.
    await replicaB.consume("mem_2");
  });

  it("count in memory when no Redis is configured", async () => {
    const limiter = createRateLimiter({ name: "memory", points: 1, durationSeconds: 60 });
    await limiter.consume("mem_1");
    expect((await refusal(limiter.consume("mem_1"))).status).toBe(429);
  });

  it("fall back to counting in memory on each replica when Redis is unreachable", async () => {
    const down = new Redis("redis://127.0.0.1:9", { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    const limiter = createRateLimiter({ name: "down", points: 2, durationSeconds: 60, redis: down });
    await limiter.consume("mem_1");
    await limiter.consume("mem_1");
    expect((await refusal(limiter.consume("mem_1"))).status).toBe(429);
    down.disconnect();
  });
});
