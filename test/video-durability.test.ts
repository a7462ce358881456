import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { videoQueues } from "../src/core/video/video-queues.js";
import type { Database } from "../src/store/database.js";
import { createJobQueue, type JobQueue } from "../src/store/job-queue.js";
import { createPostgresDatabase } from "../src/store/postgres-database.js";
import { createTestDatabase } from "./support/test-server.js";
import { startServeProcess, type ServeProcess } from "./support/serve-process.js";
import { postVideo, waitForVideo, writeVideoModelsFile } from "./support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./video-providers/fake-openai-videos.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";
const upstreamKey = "sk-upstream-test";

let upstream: FakeOpenAiVideos;
let dir: string;

beforeAll(async () => {
  upstream = await startFakeOpenAiVideos(upstreamKey);
  dir = mkdtempSync(join(tmpdir(), "switchboard-video-durability-"));
});

afterAll(async () => {
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An upstream model polled every `pollMs`; the fake completes a job on its third poll. */
function upstreamModel(id: string, pollMs: number) {
  return { id, provider: "openai-videos", slug: "fake", base_url: upstream.baseUrl, api_key: upstreamKey, upstream_model: "sora-2", poll_interval_ms: pollMs, pricing: { per_video: 0.01 } };
}

const submissions = (prompt: string) => upstream.requests.filter((request) => request.method === "POST" && request.body?.prompt === prompt);
/** Polls the fake received after the submission of `prompt` (one job in flight at a time). */
function pollsAfterSubmission(prompt: string): number {
  const at = upstream.requests.findIndex((request) => request.method === "POST" && request.body?.prompt === prompt);
  return at < 0 ? 0 : upstream.requests.slice(at + 1).filter((request) => request.method === "GET").length;
}

describe("a video job survives kill -9 of its server", () => {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let running: { child: ChildProcess; exited: Promise<unknown> } | undefined;

  afterAll(async () => {
    running?.child.kill("SIGKILL");
    await running?.exited;
    await database?.drop();
  });

  it("is picked up again after a restart and completes, submitted upstream once", { timeout: 90_000 }, async () => {
    const dataDir = join(dir, "kill-9");
    database = onPostgres ? await createTestDatabase() : undefined;
    const env = {
      DATA_DIR: dataDir,
      MODELS_FILE: writeVideoModelsFile(mkdtempSync(join(dir, "models-")), [upstreamModel("fake/resumable", 1_500)]),
      VIDEO_JOB_LEASE_SECONDS: "2",
      ...(database && { DATABASE_URL: database.url }),
    };
    const args = database ? ["--bootstrap"] : [];
    let server = await startServeProcess(env, args);
    running = server;
    const key = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")).api_key as string;

    const submitted = await postVideo(server.httpUrl, key, { model: "fake/resumable", prompt: "survive kill -9" });
    expect(submitted.status).toBe(200);
    // Wait until the worker has submitted upstream and polled once: the job is mid-flight.
    await waitForVideo(server.httpUrl, key, submitted.body.polling_url, { until: (job) => job.status === "in_progress" && pollsAfterSubmission("survive kill -9") > 0 });
    server.child.kill("SIGKILL");
    await server.exited;

    server = await startServeProcess(env, args);
    running = server;
    const { job } = await waitForVideo(server.httpUrl, key, submitted.body.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.body.id, status: "completed", usage: { cost: 0.01, is_byok: false } });
    expect(submissions("survive kill -9")).toHaveLength(1);
    const content = await fetch(`${server.httpUrl}${job.unsigned_urls[0]}`, { headers: { authorization: `Bearer ${key}` } });
    expect(Buffer.from(await content.arrayBuffer()).equals(upstream.content)).toBe(true);
  });
});

describe("a shutdown or a crash during the submit to the provider", () => {
  const databases: { url: string; drop: () => Promise<void> }[] = [];
  const servers: ServeProcess[] = [];

  async function serve(env: Record<string, string>, args: string[] = []): Promise<ServeProcess> {
    const server = await startServeProcess(env, args);
    servers.push(server);
    return server;
  }

  afterAll(async () => {
    for (const server of servers) server.child.kill("SIGKILL");
    await Promise.all(servers.map((server) => server.exited));
    for (const database of databases) await database.drop();
  });

  /** Starts a server whose next upstream submit is answered after `submitDelayMs`; resolves once that submit reached the upstream. */
  async function submitSlowly(dataDir: string, prompt: string, submitDelayMs: number) {
    const database = onPostgres ? await createTestDatabase() : undefined;
    if (database) databases.push(database);
    const env = {
      DATA_DIR: dataDir,
      MODELS_FILE: writeVideoModelsFile(mkdtempSync(join(dir, "models-")), [upstreamModel("fake/slow-submit", 200)]),
      VIDEO_JOB_LEASE_SECONDS: "2",
      ...(database && { DATABASE_URL: database.url }),
    };
    const server = await serve(env, database ? ["--bootstrap"] : []);
    const key = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")).api_key as string;
    upstream.answerNext({ delayMs: submitDelayMs });
    const submitted = await postVideo(server.httpUrl, key, { model: "fake/slow-submit", prompt });
    expect(submitted.status).toBe(200);
    await vi.waitFor(() => expect(submissions(prompt)).toHaveLength(1), { timeout: 15_000, interval: 20 });
    return { server, env, key, submitted: submitted.body };
  }

  it("lets a submit in flight at SIGTERM finish, so the restarted server resumes that provider job", { timeout: 90_000 }, async () => {
    const prompt = "submit across a SIGTERM";
    const startedBefore = upstream.jobsStarted();
    const { server, env, key, submitted } = await submitSlowly(join(dir, "sigterm-submit"), prompt, 1_500);
    server.child.kill("SIGTERM");
    await server.exited;

    const restarted = await serve(env);
    const { job } = await waitForVideo(restarted.httpUrl, key, submitted.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.id, status: "completed" });
    expect(submissions(prompt)).toHaveLength(1);
    expect(upstream.jobsStarted() - startedBefore).toBe(1);
  });

  it("sends the same idempotency key again after kill -9, so the provider starts the job once", { timeout: 90_000 }, async () => {
    const prompt = "submit across a kill -9";
    const startedBefore = upstream.jobsStarted();
    const { server, env, key, submitted } = await submitSlowly(join(dir, "kill-submit"), prompt, 1_000);
    server.child.kill("SIGKILL");
    await server.exited;

    const restarted = await serve(env);
    const { job } = await waitForVideo(restarted.httpUrl, key, submitted.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.id, status: "completed" });
    const keys = submissions(prompt).map((request) => request.headers["idempotency-key"]);
    expect(keys).toEqual([submitted.id, submitted.id]);
    expect(upstream.jobsStarted() - startedBefore).toBe(1);
  });
});

// A replica that stalls (a long pause, or cut off from the database) past its lease loses the job to
// another replica, which resumes the stored provider job: the stalled one must not cancel it upstream.
describe.skipIf(!onPostgres)("a replica that lost its lease", () => {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  const replicas: ServeProcess[] = [];

  afterAll(async () => {
    for (const replica of replicas) replica.child.kill("SIGKILL");
    await Promise.all(replicas.map((replica) => replica.exited));
    await database?.drop();
  });

  it("leaves the provider job to the replica that took the job over", { timeout: 90_000 }, async () => {
    const dataDir = join(dir, "lease-lost");
    database = await createTestDatabase();
    const env = (pollMs: number) => ({
      DATA_DIR: dataDir,
      MODELS_FILE: writeVideoModelsFile(mkdtempSync(join(dir, "models-")), [upstreamModel("fake/taken-over", pollMs)]),
      VIDEO_JOB_LEASE_SECONDS: "2",
      DATABASE_URL: database!.url,
    });
    const prompt = "stall past the lease";
    // A waits a minute between polls, so it polls once before its stall and not again after it.
    const a = await startServeProcess(env(60_000), ["--bootstrap"]);
    replicas.push(a);
    const key = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")).api_key as string;
    const submitted = await postVideo(a.httpUrl, key, { model: "fake/taken-over", prompt });
    expect(submitted.status).toBe(200);
    await waitForVideo(a.httpUrl, key, submitted.body.polling_url, { until: () => pollsAfterSubmission(prompt) > 0 });
    a.child.kill("SIGSTOP");

    const b = await startServeProcess(env(1_000));
    replicas.push(b);
    // A is stopped: a further poll is B's, resuming the stored provider job.
    await vi.waitFor(() => expect(pollsAfterSubmission(prompt)).toBeGreaterThan(1), { timeout: 30_000, interval: 50 });
    let aLog = "";
    a.child.stdout!.on("data", (chunk: Buffer) => (aLog += chunk.toString()));
    a.child.kill("SIGCONT");
    await vi.waitFor(() => expect(aLog).toContain("video job lease lost"), { timeout: 15_000, interval: 50 });

    const { job } = await waitForVideo(b.httpUrl, key, submitted.body.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.body.id, status: "completed" });
    expect(submissions(prompt)).toHaveLength(1);
    expect(upstream.requests.filter((request) => request.method === "DELETE")).toEqual([]);
  });
});

// A replica killed between taking a run from the queue and claiming its job leaves no lease to lapse.
describe.skipIf(!onPostgres)("a replica that died before claiming the job it took from the queue", () => {
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let db: Database | undefined;
  let dying: JobQueue | undefined;
  const replicas: ServeProcess[] = [];

  afterAll(async () => {
    for (const replica of replicas) replica.child.kill("SIGKILL");
    await Promise.all(replicas.map((replica) => replica.exited));
    await dying?.stop();
    await db?.close();
    await database?.drop();
  });

  it("has its run retried by a sweep within seconds, not left pending until the job's time to live", { timeout: 90_000 }, async () => {
    database = await createTestDatabase();
    const env = { DATA_DIR: join(dir, "unclaimed"), DATABASE_URL: database.url, VIDEO_JOB_LEASE_SECONDS: "2" };
    const api = await startServeProcess({ ...env, VIDEO_WORKERS: "0" }, ["--bootstrap"]);
    replicas.push(api);
    const key = JSON.parse(readFileSync(join(env.DATA_DIR, "bootstrap.json"), "utf8")).api_key as string;

    // The dying replica's worker: it takes the run from the queue and never gets as far as claiming the job.
    db = await createPostgresDatabase(database.url, 1);
    dying = await createJobQueue({ db, databaseUrl: database.url, onError: () => undefined });
    await dying.start();
    let taken!: () => void;
    const took = new Promise<void>((resolve) => (taken = resolve));
    await dying.work(videoQueues.run, { workers: 1, pollIntervalSeconds: 0.5 }, () => {
      taken();
      return new Promise<void>(() => undefined);
    });
    const submitted = await postVideo(api.httpUrl, key, { model: "local/test-pattern", prompt: "taken, never claimed", duration: 1 });
    expect(submitted.status).toBe(200);
    await took;

    const worker = await startServeProcess(env);
    replicas.push(worker);
    const { job } = await waitForVideo(worker.httpUrl, key, submitted.body.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.body.id, status: "completed" });
  });
});
