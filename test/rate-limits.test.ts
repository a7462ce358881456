import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { pino } from "pino";
import { ConnectError } from "@connectrpc/connect";
import { createRateLimiter } from "../src/core/rate-limiter.js";
import { describeError } from "../src/core/error-catalogue.js";
import { connectRedis } from "../src/server/redis-client.js";

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

  it("fall back to counting in memory when the server's Redis stops answering, instead of waiting for it", async () => {
    // A proxy that can go silent while keeping the connection open, as in a partition.
    const { hostname, port } = new URL(redisUrl);
    let silent = false;
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(port || 6379), hostname);
      sockets.add(client).add(upstream);
      client.on("data", (data) => silent || upstream.write(data));
      upstream.on("data", (data) => silent || client.write(data));
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const redis = await connectRedis(`redis://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`, pino({ level: "silent" }));
    try {
      const limiter = createRateLimiter({ name: `silent-${process.pid}-${Date.now()}`, points: 2, durationSeconds: 60, redis });
      await limiter.consume("mem_1");
      silent = true;
      await limiter.consume("mem_1");
      await limiter.consume("mem_1");
      expect((await refusal(limiter.consume("mem_1"))).status).toBe(429);
    } finally {
      redis.disconnect();
      for (const socket of sockets) socket.destroy();
      proxy.close();
    }
  }, 10_000);
});
