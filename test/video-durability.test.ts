import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadServerConfig } from "../src/server/config.js";
import { startServer, type RunningServer } from "../src/server/server.js";
import { createTestDatabase, startTestServer, type TestServer } from "./support/test-server.js";
import { freePort } from "./support/free-port.js";
import { postVideo, waitForVideo, writeVideoModelsFile } from "./support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./video-providers/fake-openai-videos.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";
const root = join(import.meta.dirname, "..");
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

/** `switchboard serve` as an operator runs it, in a process of its own. */
async function serve(env: Record<string, string>, args: string[]): Promise<{ child: ChildProcess; httpUrl: string; exited: Promise<unknown> }> {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ["bin/switchboard.js", "serve", ...args], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), GRPC_PORT: String(grpcPort), EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Kept for the failure message: pino logs to stdout, crashes go to stderr.
  let output = "";
  for (const stream of [child.stdout!, child.stderr!]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const httpUrl = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 40_000; ; ) {
    if (child.exitCode !== null) throw new Error(`switchboard serve exited with ${child.exitCode}: ${output}`);
    const ready = await fetch(`${httpUrl}/readyz`).then((response) => response.ok, () => false);
    if (ready) return { child, httpUrl, exited };
    if (Date.now() > deadline) throw new Error("switchboard serve did not become ready");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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
    let server = await serve(env, args);
    running = server;
    const key = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")).api_key as string;

    const submitted = await postVideo(server.httpUrl, key, { model: "fake/resumable", prompt: "survive kill -9" });
    expect(submitted.status).toBe(200);
    // Wait until the worker has submitted upstream and polled once: the job is mid-flight.
    await waitForVideo(server.httpUrl, key, submitted.body.polling_url, { until: (job) => job.status === "in_progress" && pollsAfterSubmission("survive kill -9") > 0 });
    server.child.kill("SIGKILL");
    await server.exited;

    server = await serve(env, args);
    running = server;
    const { job } = await waitForVideo(server.httpUrl, key, submitted.body.polling_url, { timeoutMs: 30_000 });
    expect(job).toMatchObject({ id: submitted.body.id, status: "completed", usage: { cost: 0.01, is_byok: false } });
    expect(submissions("survive kill -9")).toHaveLength(1);
    const content = await fetch(`${server.httpUrl}${job.unsigned_urls[0]}`, { headers: { authorization: `Bearer ${key}` } });
    expect(Buffer.from(await content.arrayBuffer()).equals(upstream.content)).toBe(true);
  });
});

describe.skipIf(!onPostgres)("two replicas on one PostgreSQL", () => {
  let first: TestServer;
  let second: RunningServer;

  beforeAll(async () => {
    const env = { MODELS_FILE: writeVideoModelsFile(mkdtempSync(join(dir, "models-")), [upstreamModel("fake/quick", 20)]), VIDEO_WORKERS: "2" };
    first = await startTestServer(env);
    // Same database and data directory (outputs must be readable from either replica), no bootstrap.
    const config = { ...loadServerConfig({ ...env, PORT: "0", GRPC_PORT: "0", DATA_DIR: first.dataDir, EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1" }), databaseUrl: first.databaseUrl, shutdownGraceMs: 1_000 };
    second = await startServer(config, pino({ level: "silent" }));
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("runs every job exactly once between them", { timeout: 60_000 }, async () => {
    const key = first.tenant.api_key;
    const prompts = Array.from({ length: 12 }, (_, i) => `replicas ${i}`);
    const submitted = await Promise.all(prompts.map((prompt, i) => postVideo(i % 2 ? second.httpUrl : first.httpUrl, key, { model: "fake/quick", prompt })));
    expect(submitted.map(({ status }) => status)).toEqual(prompts.map(() => 200));
    const finished = await Promise.all(submitted.map(({ body }, i) => waitForVideo(i % 2 ? first.httpUrl : second.httpUrl, key, body.polling_url)));
    expect(finished.map(({ job }) => job.status)).toEqual(prompts.map(() => "completed"));
    for (const prompt of prompts) expect(submissions(prompt)).toHaveLength(1);
    const jobs = await Promise.all(submitted.map(({ body }) => first.server.store.videoJobs.get(body.id)));
    expect(jobs.map((job) => job?.claims)).toEqual(prompts.map(() => 1));
    // Both replicas took part: the queue shared the work rather than one replica doing it all.
    expect(new Set(jobs.map((job) => job?.claimedBy)).size).toBe(2);
  });
});
