import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startInternHost, type RunningInternHost } from "../src/intern-host/intern-host.js";
import { loadServerConfig } from "../src/server/config.js";
import { startServer, type RunningServer } from "../src/server/server.js";
import { createSecretBox, sealedPrefix, type SecretBox } from "../src/store/secret-box.js";
import { openStore, type Store } from "../src/store/store.js";
import { contentOf, promptBody, readChat } from "./support/chat-harness.js";
import { scriptedAgentCommand } from "./support/scripted-agent-command.js";
import { createTestDatabase, openTestStore, startTestServer, type TestStore } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";
const hostToken = "host-token-kept-sealed-7c1e";
const signingSecret = "signing-secret-kept-sealed-42";

/** The raw columns, read past the store, as a dump or an injection would see them. */
async function storedSecrets(store: Store): Promise<string[]> {
  const interns = await store.db.query<{ host_token: string }>("SELECT host_token FROM interns");
  const organizations = await store.db.query<{ webhook_signing_secret: string }>("SELECT webhook_signing_secret FROM organizations WHERE webhook_signing_secret IS NOT NULL");
  return [...interns.map((row) => row.host_token), ...organizations.map((row) => row.webhook_signing_secret)];
}

describe("secrets written through the store", () => {
  let opened: TestStore;
  let orgId: string;

  beforeAll(async () => {
    opened = await openTestStore();
    orgId = await opened.store.organizations.create("sealed");
  });
  afterAll(() => opened?.close());

  it("are sealed in their columns and read back in clear", async () => {
    const { store } = opened;
    await store.interns.add({ orgId, id: "sealed", endpoint: "http://127.0.0.1:9", hostToken, state: "running" });
    await store.webhookSettings.set(orgId, { signingSecret });
    const stored = await storedSecrets(store);
    expect(stored).toHaveLength(2);
    for (const value of stored) {
      expect(value.startsWith(sealedPrefix)).toBe(true);
      expect(value).not.toContain(hostToken);
      expect(value).not.toContain(signingSecret);
    }
    expect((await store.interns.find(orgId, "sealed"))?.hostToken).toBe(hostToken);
    expect((await store.webhookSettings.get(orgId)).signingSecret).toBe(signingSecret);

    await store.interns.setEndpoint(orgId, "sealed", "http://127.0.0.1:10", "a-new-host-token");
    const [row] = await store.db.query<{ host_token: string }>("SELECT host_token FROM interns WHERE id = 'sealed'");
    expect(row.host_token.startsWith(sealedPrefix)).toBe(true);
    expect((await store.interns.find(orgId, "sealed"))?.hostToken).toBe("a-new-host-token");
  });

  it("do not open when copied into another row", async () => {
    const { store } = opened;
    await store.interns.add({ orgId, id: "victim", endpoint: "http://127.0.0.1:9", hostToken: "victim-token", state: "running" });
    await store.interns.add({ orgId, id: "thief", endpoint: "http://127.0.0.1:9", hostToken: "thief-token", state: "running" });
    await store.db.query("UPDATE interns SET host_token = (SELECT host_token FROM interns WHERE id = 'victim') WHERE id = 'thief'");
    await expect(store.interns.find(orgId, "thief")).rejects.toThrow(`The sealed value of interns.host_token:${orgId}:thief does not open`);
  });
});

describe("a store reopened with a key", () => {
  let database: { url: string; drop(): Promise<void> } | undefined;
  let dataDir: string;
  const key = createSecretBox(randomBytes(32));
  const open = (secrets: SecretBox) => openStore({ databaseUrl: database?.url, dataDir, secrets });

  beforeAll(async () => {
    database = onPostgres ? await createTestDatabase() : undefined;
    dataDir = mkdtempSync(join(tmpdir(), "switchboard-secrets-at-rest-"));
  });
  afterAll(async () => {
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("seals the values written in clear before, and still reads them", async () => {
    const before = await open(createSecretBox(undefined));
    let orgId: string;
    try {
      orgId = await before.organizations.create("written in clear");
      await before.interns.add({ orgId, id: "legacy", endpoint: "http://127.0.0.1:9", hostToken, state: "running" });
      await before.webhookSettings.set(orgId, { signingSecret });
      expect(await storedSecrets(before)).toEqual([hostToken, signingSecret]);
    } finally {
      await before.close();
    }
    const after = await open(key);
    try {
      const stored = await storedSecrets(after);
      expect(stored).toHaveLength(2);
      for (const value of stored) expect(value.startsWith(sealedPrefix)).toBe(true);
      expect((await after.interns.find(orgId, "legacy"))?.hostToken).toBe(hostToken);
      expect((await after.webhookSettings.get(orgId)).signingSecret).toBe(signingSecret);
    } finally {
      await after.close();
    }
  });

  it("refuses to open with another key, or with none, once its secrets are sealed", async () => {
    await expect(open(createSecretBox(randomBytes(32)))).rejects.toThrow("SECRETS_KEY does not match the key this database's secrets were sealed with");
    await expect(open(createSecretBox(undefined))).rejects.toThrow("This database's secrets are sealed, but SECRETS_KEY is not set");
    // Refusals leave nothing open: the right key still opens it.
    await (await open(key)).close();
  });
});

describe.skipIf(!onPostgres)("replicas starting at once on a database with no key check yet", () => {
  let database: { url: string; drop(): Promise<void> };
  const stores: Store[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await database?.drop();
  });

  it("agree on one key: those with the key written first start, the others are refused", async () => {
    const keys = [randomBytes(32), randomBytes(32)];
    const starts = [0, 1, 0, 1].map((which) => openStore({ databaseUrl: database.url, secrets: createSecretBox(keys[which]) }).then((store) => ({ which, store })));
    const results = await Promise.allSettled(starts);
    const started = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
    stores.push(...started.map(({ store }) => store));
    expect(started).toHaveLength(2);
    expect(new Set(started.map(({ which }) => which)).size).toBe(1);
    for (const result of results) if (result.status === "rejected") expect(String(result.reason)).toContain("SECRETS_KEY does not match");
    expect(await stores[0].db.query("SELECT count(*)::int AS checks FROM secrets_key_check")).toEqual([{ checks: 1 }]);
  });
});

describe("a server", () => {
  let host: RunningInternHost;
  const servers: RunningServer[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    host = await startInternHost({ port: 0, token: hostToken, agent: scriptedAgentCommand() });
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  afterAll(() => host?.close());

  async function start(env: Record<string, string>, dataDir: string, databaseUrl?: string): Promise<RunningServer> {
    const config = { ...loadServerConfig({ PORT: "0", GRPC_PORT: "0", DATA_DIR: dataDir, EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", ...env }, { bootstrap: true }), databaseUrl };
    const server = await startServer(config, pino({ level: "silent" }));
    servers.push(server);
    return server;
  }

  async function chatOn(server: RunningServer, apiKey: string) {
    return readChat(
      await fetch(`${server.httpUrl}/api/v1/interns/scripted/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
        body: JSON.stringify(promptBody("say hello")),
      }),
    );
  }

  it("restarted on the same data still reaches its interns, and refuses another SECRETS_KEY", { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "switchboard-secrets-restart-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const database = onPostgres ? await createTestDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    // The embedded store generates its key into DATA_DIR; PostgreSQL needs the one every replica shares.
    const env: Record<string, string> = onPostgres ? { SECRETS_KEY: randomBytes(32).toString("base64") } : {};

    const first = await start(env, dataDir, database?.url);
    const tenant = first.bootstrap!;
    await first.store.interns.add({ orgId: tenant.organization_id, id: "scripted", endpoint: host.url, hostToken, state: "running" });
    expect(await storedSecrets(first.store)).not.toContain(hostToken);
    expect(contentOf(await chatOn(first, tenant.api_key))).toBe("hello");
    await servers.splice(0)[0].close();

    const second = await start(env, dataDir, database?.url);
    const turn = await chatOn(second, tenant.api_key);
    expect(turn.status).toBe(200);
    expect(contentOf(turn)).toBe("hello");
    await servers.splice(0)[0].close();

    await expect(start({ SECRETS_KEY: randomBytes(32).toString("hex") }, dataDir, database?.url)).rejects.toThrow(
      "SECRETS_KEY does not match the key this database's secrets were sealed with",
    );
  });
});

describe.skipIf(!onPostgres)("a server on PostgreSQL without SECRETS_KEY", () => {
  it("keeps secrets in clear, as before, and says so once at start", async () => {
    const lines: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    });
    const t = await startTestServer({}, { secretsKey: undefined }, logStream);
    try {
      const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => /stored unencrypted/.test(entry.msg));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40 });
      expect(warnings[0].msg).toContain("set the same SECRETS_KEY on every replica");
      await t.admin.addIntern({ orgId: t.tenant.organization_id, id: "clear", endpoint: "http://127.0.0.1:9", token: hostToken, state: "running" });
      expect(await storedSecrets(t.server.store)).toContain(hostToken);
    } finally {
      await t.close();
    }
  });
});
