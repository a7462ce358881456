import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createClient } from "@connectrpc/connect";
import { SpeechService } from "../src/gen/switchboard/v1/speech_pb.js";
import { startSpeechChargeSweep } from "../src/core/speech/speech-charge-sweep.js";
import { openStore, type Store } from "../src/store/store.js";
import { fakeApiKey, fakeChunkBytes, startFakeOpenAiSpeechServer, type FakeOpenAiSpeechServer } from "./speech/fake-openai-speech-server.js";
import { eventually } from "./support/speech-http.js";
import { startServeProcess, stopServeProcess, type ServeProcess } from "./support/serve-process.js";
import { createTestDatabase, grpcTransportFor, openTestStore, serverSecrets, startTestServer, type TestServer, type TestStore } from "./support/test-server.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";
const startingCredits = 10;
/** 1 USD per 1000 characters: 100 characters cost 0.1 USD. */
const priced = { model: "fake/tts", voice: "alloy", input: "x".repeat(100) };
const cost = 0.1;

/** The generation ids with a pending charge. */
async function pending(store: Store): Promise<string[]> {
  return (await store.db.query<{ generation_id: string }>("SELECT generation_id FROM speech_charges ORDER BY generation_id")).map((row) => row.generation_id);
}

/** Makes a pending charge look `seconds` old, as if its process had died that long ago. */
async function age(store: Store, generationId: string, seconds: number): Promise<void> {
  await store.db.query("UPDATE speech_charges SET created_at = now() - $2 * interval '1 second' WHERE generation_id = $1", [generationId, seconds]);
}

/** A models file whose priced `fake/tts` speaks through the fake upstream, waiting up to `timeoutMs` for it. */
function writeModelsFile(dir: string, upstream: FakeOpenAiSpeechServer, timeoutMs: number): string {
  const path = join(dir, "models.json");
  const entry = { id: "fake/tts", provider: "openai-compatible", base_url: upstream.baseUrl, api_key_env: "FAKE_SPEECH_API_KEY", upstream_model: "tts-1", price_per_1k_chars: 1, timeout_ms: timeoutMs };
  writeFileSync(path, JSON.stringify({ speech: [entry] }));
  return path;
}

describe("pending speech charges in the store", () => {
  let opened: TestStore;
  let store: Store;
  let orgId: string;
  const credits = async () => (await store.organizations.credits(orgId))!;

  beforeAll(async () => {
    opened = await openTestStore();
    store = opened.store;
  });
  afterAll(() => opened?.close());
  beforeEach(async () => {
    orgId = await store.organizations.create("speech charges");
    await store.organizations.setCredits(orgId, startingCredits);
  });

  it("charge takes the credits and records the charge as pending, in one step", async () => {
    expect(await store.speechCharges.charge(orgId, cost, "gen-charge")).toBe(true);
    expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
    expect(await pending(store)).toContain("gen-charge");
    await store.speechCharges.settle("gen-charge", false);
  });

  it("charge takes and records nothing when the balance does not cover it", async () => {
    await store.organizations.setCredits(orgId, 0.05);
    expect(await store.speechCharges.charge(orgId, cost, "gen-short")).toBe(false);
    expect(await credits()).toBeCloseTo(0.05, 6);
    expect(await pending(store)).not.toContain("gen-short");
  });

  it("settle with a refund gives the credits back once; a second settle finds the charge gone", async () => {
    await store.speechCharges.charge(orgId, cost, "gen-refund");
    expect(await store.speechCharges.settle("gen-refund", true)).toBe("refunded");
    expect(await store.speechCharges.settle("gen-refund", true)).toBe("gone");
    expect(await credits()).toBeCloseTo(startingCredits, 6);
    expect(await pending(store)).not.toContain("gen-refund");
  });

  it("settle without a refund keeps the charge, and no later sweep gives it back", async () => {
    await store.speechCharges.charge(orgId, cost, "gen-kept");
    expect(await store.speechCharges.settle("gen-kept", false)).toBe("kept");
    expect(await store.speechCharges.refundStale("all")).not.toContain("gen-kept");
    expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
  });

  it("refundStale with a bound refunds only charges older than it", async () => {
    await store.speechCharges.charge(orgId, cost, "gen-old");
    await store.speechCharges.charge(orgId, cost, "gen-young");
    await age(store, "gen-old", 7200);
    expect(await store.speechCharges.refundStale(3600)).toEqual(["gen-old"]);
    expect(await pending(store)).toContain("gen-young");
    expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
    await store.speechCharges.settle("gen-young", false);
  });

  it("two concurrent sweeps (two replicas) refund each charge exactly once", async () => {
    // On PostgreSQL a second store is a second pool, as another replica would have.
    const other = opened.databaseUrl ? await openStore({ databaseUrl: opened.databaseUrl, secrets: store.secrets }) : store;
    try {
      const secondOrg = await store.organizations.create("speech charges, too");
      await store.organizations.setCredits(secondOrg, startingCredits);
      const ids = Array.from({ length: 20 }, (_, i) => `gen-race-${i}`);
      for (const [i, id] of ids.entries()) await store.speechCharges.charge(i % 2 ? orgId : secondOrg, cost, id);
      const [mine, theirs] = await Promise.all([store.speechCharges.refundStale("all"), other.speechCharges.refundStale("all")]);
      expect([...mine, ...theirs].sort()).toEqual([...ids].sort());
      expect(await credits()).toBeCloseTo(startingCredits, 6);
      expect(await store.organizations.credits(secondOrg)).toBeCloseTo(startingCredits, 6);
    } finally {
      if (other !== store) await other.close();
    }
  });

  it("a settle racing a sweep refunds the charge exactly once", async () => {
    for (let round = 0; round < 10; round++) {
      await store.speechCharges.charge(orgId, cost, `gen-settle-race-${round}`);
      const [settled, swept] = await Promise.all([store.speechCharges.settle(`gen-settle-race-${round}`, true), store.speechCharges.refundStale("all")]);
      expect((settled === "refunded" ? 1 : 0) + swept.length).toBe(1);
    }
    expect(await credits()).toBeCloseTo(startingCredits, 6);
  });

  describe("the sweep", () => {
    const logger = { info: vi.fn(), error: vi.fn() };
    afterEach(() => {
      logger.info.mockReset();
      logger.error.mockReset();
    });

    it("on the embedded store refunds every pending charge before the server serves", async () => {
      await store.speechCharges.charge(orgId, cost, "gen-embedded");
      const sweep = await startSpeechChargeSweep({ store, logger, embedded: true });
      await sweep.stop();
      expect(await pending(store)).not.toContain("gen-embedded");
      expect(await credits()).toBeCloseTo(startingCredits, 6);
      expect(logger.info).toHaveBeenCalledWith(expect.objectContaining({ count: 1, generation_ids: ["gen-embedded"] }), expect.any(String));
    });

    it("among replicas refunds, at start and then periodically, only charges past the bound", async () => {
      await store.speechCharges.charge(orgId, cost, "gen-at-start");
      await age(store, "gen-at-start", 7200);
      await store.speechCharges.charge(orgId, cost, "gen-live");
      const sweep = await startSpeechChargeSweep({ store, logger, embedded: false, intervalMs: 50 });
      try {
        expect(await pending(store)).toEqual(["gen-live"]);
        // Charged after the start: only a periodic sweep can refund it.
        await store.speechCharges.charge(orgId, cost, "gen-later");
        await age(store, "gen-later", 7200);
        expect(await eventually(async () => !(await pending(store)).includes("gen-later"))).toBe(true);
        expect(await pending(store)).toEqual(["gen-live"]);
        expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
      } finally {
        await sweep.stop();
      }
      await store.speechCharges.settle("gen-live", false);
      expect(logger.error).not.toHaveBeenCalled();
    });

    it("stops sweeping once stopped", async () => {
      const sweep = await startSpeechChargeSweep({ store, logger, embedded: false, intervalMs: 20 });
      await sweep.stop();
      await store.speechCharges.charge(orgId, cost, "gen-after-stop");
      await age(store, "gen-after-stop", 7200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await pending(store)).toContain("gen-after-stop");
      await store.speechCharges.settle("gen-after-stop", true);
    });
  });
});

describe("a synthesis's charge is pending only until the caller has the audio", () => {
  let t: TestServer;
  let upstream: FakeOpenAiSpeechServer;
  let modelsDir: string;

  beforeAll(async () => {
    upstream = await startFakeOpenAiSpeechServer();
    modelsDir = mkdtempSync(join(tmpdir(), "speech-charges-"));
    process.env.FAKE_SPEECH_API_KEY = fakeApiKey;
    t = await startTestServer({ MODELS_FILE: writeModelsFile(modelsDir, upstream, 30_000) });
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
    rmSync(modelsDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: startingCredits });
  });

  it("a stream's charge is settled once its first audio went out, while the stream is still open", async () => {
    const abort = new AbortController();
    const response = await fetch(`${t.httpUrl}/api/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...priced, voice: "stall" }),
      signal: abort.signal,
    });
    const generationId = response.headers.get("x-generation-id")!;
    expect((await response.body!.getReader().read()).value!.length).toBe(fakeChunkBytes);
    // The upstream stalls after that chunk: the synthesis is still running.
    expect(await eventually(async () => !(await pending(t.server.store)).includes(generationId))).toBe(true);
    abort.abort();
    expect(await t.server.store.organizations.credits(t.tenant.organization_id)).toBeCloseTo(startingCredits - cost, 6);
  });

  it("a unary synthesis's charge stays pending until it completes, and is refunded when it does not", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const abort = new AbortController();
    const before = await pending(t.server.store);
    const call = client.createSpeech({ ...priced, voice: "stall" }, { signal: abort.signal }).catch(() => undefined);
    let generationId: string | undefined;
    expect(await eventually(async () => (generationId = (await pending(t.server.store)).find((id) => !before.includes(id))) !== undefined)).toBe(true);
    // The upstream answers at once with its first chunk, then stalls: the call has audio, but not all of it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await pending(t.server.store)).toContain(generationId);
    abort.abort();
    await call;
    expect(await eventually(async () => !(await pending(t.server.store)).includes(generationId!))).toBe(true);
    expect(await t.server.store.organizations.credits(t.tenant.organization_id)).toBeCloseTo(startingCredits, 6);
  });
});

describe("a speech charge survives kill -9 of its server", () => {
  let upstream: FakeOpenAiSpeechServer;
  let dir: string;
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let served: ServeProcess | undefined;

  beforeAll(async () => {
    upstream = await startFakeOpenAiSpeechServer();
    dir = mkdtempSync(join(tmpdir(), "speech-charges-kill-"));
  });
  afterAll(async () => {
    served?.child.kill("SIGKILL");
    await served?.exited;
    await upstream?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("and is refunded by the next start when no audio was sent", { timeout: 120_000 }, async () => {
    const dataDir = join(dir, "data");
    database = onPostgres ? await createTestDatabase() : undefined;
    // The upstream waits far longer than the test: only the kill ends this synthesis.
    const env = { DATA_DIR: dataDir, MODELS_FILE: writeModelsFile(dir, upstream, 600_000), FAKE_SPEECH_API_KEY: fakeApiKey, ...(database && { DATABASE_URL: database.url }) };
    const args = database ? ["--bootstrap"] : [];
    served = await startServeProcess(env, args);
    const tenant = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")) as { api_key: string; organization_id: string };
    const asked = upstream.requests.length;
    void fetch(`${served.httpUrl}/api/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...priced, voice: "hang" }),
    }).catch(() => undefined);
    // The engine is called after the charge: once the upstream has the request, the credits are taken.
    expect(await eventually(async () => upstream.requests.length > asked)).toBe(true);
    served.child.kill("SIGKILL");
    await served.exited;

    const openTheStore = () => openStore({ databaseUrl: database?.url, dataDir, secrets: serverSecrets(dataDir, database?.url) });
    let store = await openTheStore();
    try {
      expect(await store.organizations.credits(tenant.organization_id)).toBeCloseTo(startingCredits - cost, 6);
      const [generationId] = await pending(store);
      expect(generationId).toMatch(/^gen-/);
      // Replicas refund only charges past the bound (an hour): the dead server's charge is made to look that old.
      if (database) await age(store, generationId, 7200);
    } finally {
      await store.close();
    }

    served = await startServeProcess(env, args);
    await stopServeProcess(served);
    store = await openTheStore();
    try {
      expect(await store.organizations.credits(tenant.organization_id)).toBeCloseTo(startingCredits, 6);
      expect(await pending(store)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
