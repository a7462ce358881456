import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createJobQueue, type JobQueue } from "../src/store/job-queue.js";
import { createPostgresDatabase } from "../src/store/postgres-database.js";
import type { Database } from "../src/store/database.js";
import { startPostgresRelay, type PostgresRelay } from "./support/postgres-relay.js";
import { createTestDatabase } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";

// Replicas that start together define the same queues at the same moment.
describe.skipIf(!onPostgres)("queues defined by replicas starting together on one PostgreSQL", () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: Database;
  const queues: JobQueue[] = [];
  const errors: Error[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await createPostgresDatabase(database.url, 1);
    for (let i = 0; i < 4; i++) queues.push(await createJobQueue({ db, databaseUrl: database.url, onError: (error) => errors.push(error) }));
    await Promise.all(queues.map((queue) => queue.start()));
  });
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.stop()));
    await db?.close();
    await database?.drop();
  });

  it("are created once, without a deadlock aborting any replica's start", async () => {
    const definition = { retryLimit: 3, retryDelaySeconds: 1, retryBackoff: true, expireInSeconds: 600 };
    for (let round = 0; round < 5; round++) {
      const names = [`race-${round}-a`, `race-${round}-b`];
      await Promise.all(queues.map(async (queue) => { for (const name of names) await queue.define(name, definition); }));
    }
    const rows = await db.query<{ name: string }>("SELECT name FROM pgboss.queue WHERE name LIKE 'race-%' ORDER BY name");
    expect(rows).toHaveLength(10);
    expect(errors).toEqual([]);
  });
});

// pg-boss records a job's end without awaiting it: with the database gone at that moment, the
// failure must reach onError (not crash the process), and the job must run again once it is back.
describe.skipIf(!onPostgres)("a job ending while PostgreSQL is unreachable", () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: Database;
  let relay: PostgresRelay;
  let queue: JobQueue;
  const errors: Error[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await createPostgresDatabase(database.url, 1);
    relay = await startPostgresRelay(database.url);
    queue = await createJobQueue({ db, databaseUrl: relay.url, onError: (error) => errors.push(error) });
    await queue.start();
  });
  afterAll(async () => {
    relay?.restore();
    await queue?.stop();
    await relay?.close();
    await db?.close();
    await database?.drop();
  });

  it("is reported, not an unhandled rejection, and retried once the database is back", { timeout: 90_000 }, async () => {
    const name = "blip";
    // Expiry is found by pg-boss's maintenance, every 30 s.
    await queue.define(name, { retryLimit: 3, retryDelaySeconds: 1, retryBackoff: false, expireInSeconds: 1 });
    const runs: number[] = [];
    await queue.work<{ n: number }>(name, { workers: 1, pollIntervalSeconds: 0.5 }, async ({ n }) => {
      runs.push(n);
      if (runs.length > 1) return;
      // The database goes while the handler runs, so failing the job cannot be recorded.
      relay.cut();
      throw new Error("the store failed");
    });
    await queue.send(name, { n: 1 });
    queue.notify(name);

    const reported = () => errors.find((error) => /recording the end of a job failed/.test(error.message));
    await vi.waitFor(() => expect(reported()?.cause).toBeInstanceOf(Error), { timeout: 15_000, interval: 100 });
    expect(runs).toEqual([1]);
    relay.restore();

    const state = async () => (await db.query<{ state: string }>("SELECT state FROM pgboss.job WHERE name = $1", [name]))[0]?.state;
    await vi.waitFor(async () => expect(await state()).toBe("completed"), { timeout: 60_000, interval: 250 });
    expect(runs).toEqual([1, 1]);
  });
});
