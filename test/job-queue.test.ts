import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJobQueue, type JobQueue } from "../src/store/job-queue.js";
import { createPostgresDatabase } from "../src/store/postgres-database.js";
import type { Database } from "../src/store/database.js";
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
