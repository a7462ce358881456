import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, migrations } from "../src/store/migrations.js";
import { createPostgresDatabase } from "../src/store/postgres-database.js";
import type { Database } from "../src/store/database.js";
import { createTestDatabase } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";

// Replicas deployed together all migrate an empty database at the same moment.
describe.skipIf(!onPostgres)("migrations run by replicas starting together on one empty PostgreSQL", () => {
  const databases: { url: string; drop: () => Promise<void> }[] = [];
  const pools: Database[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 5; i++) databases.push(await createTestDatabase());
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.close()));
    await Promise.all(databases.map((database) => database.drop()));
  });

  it("all succeed, and apply each migration once", async () => {
    // Several empty databases, four replicas each: the race is a matter of timing, so it gets several chances.
    for (const database of databases) {
      const replicas = await Promise.all([1, 2, 3, 4].map(() => createPostgresDatabase(database.url, 1)));
      pools.push(...replicas);
      const outcomes = await Promise.allSettled(replicas.map((db) => migrate(db)));
      expect(outcomes.filter((outcome) => outcome.status === "rejected")).toEqual([]);
      const applied = await replicas[0].query<{ id: number }>("SELECT id FROM schema_migrations ORDER BY id");
      expect(applied.map((row) => row.id)).toEqual(migrations.map((migration) => migration.id));
    }
  });
});
