import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeChannel, createChangeNotices, parseChange, type ChangeNotice, type ChangeNotices } from "../src/store/change-notices.js";
import { createPgliteDatabase } from "../src/store/pglite-database.js";
import { createPostgresDatabase } from "../src/store/postgres-database.js";
import type { Database } from "../src/store/database.js";
import { startPostgresRelay } from "./support/postgres-relay.js";
import { createTestDatabase } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";

/** Resolves with the first notice `matches` accepts, or rejects after `ms`. */
function nextNotice(notices: ChangeNotice[], matches: (notice: ChangeNotice) => boolean, ms = 5_000): Promise<ChangeNotice> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      const found = notices.find(matches);
      if (found) return resolve(found);
      if (Date.now() - started > ms) return reject(new Error(`no matching notice within ${ms} ms; heard ${JSON.stringify(notices)}`));
      setTimeout(poll, 10);
    };
    poll();
  });
}

describe.skipIf(!onPostgres)("change notices between processes on one PostgreSQL", () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: Database;
  let a: ChangeNotices;
  let b: ChangeNotices;
  const heardByA: ChangeNotice[] = [];
  const heardByB: ChangeNotice[] = [];
  const errorsOfB: unknown[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    db = await createPostgresDatabase(database.url, 2);
    a = await createChangeNotices(db, { databaseUrl: database.url, onError: () => undefined });
    b = await createChangeNotices(db, { databaseUrl: database.url, onError: (error) => errorsOfB.push(error) });
    a.subscribe((notice) => heardByA.push(notice));
    b.subscribe((notice) => heardByB.push(notice));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.close();
    await database?.drop();
  });

  it("reach the publishing process before publish returns, and the others through the database", async () => {
    const publishing = a.publish({ kind: "key", keyId: "key_1" });
    // Synchronously: the change holds on this replica before any await.
    expect(heardByA).toContainEqual({ kind: "key", keyId: "key_1" });
    await publishing;
    expect(await nextNotice(heardByB, (notice) => notice.kind === "key" && notice.keyId === "key_1")).toEqual({ kind: "key", keyId: "key_1" });
  });

  it("carry every kind of change, and ignore anything else sent on the channel", async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      for (const payload of ["not json", "[]", '{"kind":"key"}', '{"kind":"key","keyId":7}', '{"kind":"drop-tables","orgId":"org_1"}']) {
        await client.query("SELECT pg_notify($1, $2)", [changeChannel, payload]);
      }
    } finally {
      await client.end();
    }
    const changes = [
      { kind: "member", memberId: "mem_1" },
      { kind: "member", orgId: "org_1", memberId: "mem_2" },
      { kind: "organization", orgId: "org_1" },
      { kind: "intern", orgId: "org_1", id: "intern-a" },
      { kind: "intern", id: "intern-b" },
    ] as const;
    for (const change of changes) await a.publish(change);
    await nextNotice(heardByB, (notice) => notice.kind === "intern" && notice.id === "intern-b");
    const heard = heardByB.filter((notice) => notice.kind !== "key");
    expect(heard).toEqual(changes);
  });

  it("tell subscribers to forget everything when the listening connection drops, and resume once it is back", async () => {
    heardByB.length = 0;
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // Ends every session listening on the channel: A's and B's.
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1 AND pid <> pg_backend_pid()",
        [`LISTEN ${changeChannel}`],
      );
      expect(rows.length).toBe(2);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1)", [rows.map((row) => row.pid)]);
    } finally {
      await admin.end();
    }
    await nextNotice(heardByB, (notice) => notice.kind === "everything");
    expect(errorsOfB.length).toBeGreaterThan(0);
    // Listening again (after a backoff of half a second): a later change arrives, after a second `everything`.
    const deadline = Date.now() + 10_000;
    while (!heardByB.some((notice) => notice.kind === "member" && notice.memberId === "mem_after") && Date.now() < deadline) {
      await a.publish({ kind: "member", memberId: "mem_after" });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(heardByB.filter((notice) => notice.kind === "everything").length).toBeGreaterThanOrEqual(2);
    expect(heardByB).toContainEqual({ kind: "member", memberId: "mem_after" });
  });
});

describe.skipIf(!onPostgres)("change notices over a connection that goes silent", () => {
  it("notice the silence, tell subscribers to forget everything, and listen again", async () => {
    const database = await createTestDatabase();
    const relay = await startPostgresRelay(database.url);
    const db = await createPostgresDatabase(database.url, 1);
    const errors: unknown[] = [];
    const heard: ChangeNotice[] = [];
    const direct = await createChangeNotices(db, { databaseUrl: database.url, onError: () => undefined });
    const relayed = await createChangeNotices(db, { databaseUrl: relay.url, onError: (error) => errors.push(error), liveness: { everyMs: 200, withinMs: 300 } });
    relayed.subscribe((notice) => heard.push(notice));
    try {
      relay.freeze();
      await nextNotice(heard, (notice) => notice.kind === "everything", 3_000);
      expect(String(errors[0])).toMatch(/did not answer within 300 ms/);
      // Listening again on a fresh connection: a later change arrives.
      const deadline = Date.now() + 10_000;
      while (!heard.some((notice) => notice.kind === "key" && notice.keyId === "key_after") && Date.now() < deadline) {
        await direct.publish({ kind: "key", keyId: "key_after" });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(heard).toContainEqual({ kind: "key", keyId: "key_after" });
    } finally {
      await relayed.close();
      await direct.close();
      await db.close();
      await relay.close();
      await database.drop();
    }
  });
});

describe("change notices on the embedded store", () => {
  it("reach this process's subscribers, the only process the store can have", async () => {
    const db = await createPgliteDatabase(undefined);
    try {
      const notices = await createChangeNotices(db, { onError: () => undefined });
      const heard: ChangeNotice[] = [];
      notices.subscribe((notice) => heard.push(notice));
      await notices.publish({ kind: "organization", orgId: "org_1" });
      expect(heard).toEqual([{ kind: "organization", orgId: "org_1" }]);
      await notices.close();
    } finally {
      await db.close();
    }
  });
});

describe("a change notice's payload", () => {
  it("is read only when it names a known kind with its identifiers", () => {
    expect(parseChange('{"kind":"key","keyId":"key_1","extra":true}')).toEqual({ kind: "key", keyId: "key_1" });
    expect(parseChange('{"kind":"intern","id":"x"}')).toEqual({ kind: "intern", id: "x" });
    for (const payload of [undefined, "", "null", "3", '{"kind":"key","keyId":""}', '{"kind":"intern","orgId":5,"id":"x"}', '{"kind":"member","orgId":5,"memberId":"x"}', '{"kind":"everything"}']) {
      expect(parseChange(payload)).toBeUndefined();
    }
  });
});
