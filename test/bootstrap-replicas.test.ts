import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapPath, bootstrapTenant } from "../src/server/bootstrap.js";
import { openStore, type Store } from "../src/store/store.js";
import { createTestDatabase, testSecrets } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";

// `switchboard serve --bootstrap` on every replica of a first deploy.
describe.skipIf(!onPostgres)("the first-start bootstrap of replicas starting together on one empty PostgreSQL", () => {
  let database: { url: string; drop: () => Promise<void> };
  let dir: string;
  const stores: Store[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), "switchboard-bootstrap-replicas-"));
    for (let i = 0; i < 4; i++) stores.push(await openStore({ databaseUrl: database.url, secrets: testSecrets }));
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates one tenant, without the demo intern no host here serves: the others find it there and print none", async () => {
    const tenants = await Promise.all(stores.map((store, i) => bootstrapTenant(store, join(dir, String(i)), { demoIntern: false })));
    const created = tenants.filter((tenant) => tenant !== undefined);
    expect(created).toHaveLength(1);
    expect((await stores[0].db.query("SELECT id FROM organizations")).map((row) => row.id)).toEqual([created[0]!.organization_id]);
    const written = tenants.findIndex((tenant) => tenant !== undefined);
    expect(JSON.parse(readFileSync(bootstrapPath(join(dir, String(written))), "utf8"))).toEqual(created[0]);
    expect(created[0]!.intern_id).toBeUndefined();
    expect(await stores[0].db.query("SELECT id FROM interns")).toEqual([]);
  });
});
