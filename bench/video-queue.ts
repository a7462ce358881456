import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { createTestDatabase } from "../test/support/test-server.js";
import { pino } from "pino";
import { loadServerConfig } from "../src/server/config.js";
import { startServer, type RunningServer } from "../src/server/server.js";
import type { BenchReport, BenchRow } from "./bench-row.js";
import { writeVideoModelsFile } from "../test/support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "../test/video-providers/fake-openai-videos.js";

/** PostgreSQL the bench creates its scratch databases on. */
const postgresUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Figures of one store. */
export interface VideoQueueFigures {
  /** POST /api/v1/videos on an API-only replica: validate, reserve credits, insert the job and queue it, in one transaction. */
  submit: { requestsPerSecond: number; p99Ms: number };
  /** GET /api/v1/videos/{id} on the same replica: the read beside the write. */
  poll: { requestsPerSecond: number; p99Ms: number };
  /** submit req/s ÷ poll req/s. */
  ratio: number;
  /**
   * Submit committed → a worker holds the job (video_jobs.started_at − created_at, both
   * database clock), one job at a time to idle workers on the replica that took it.
   */
  pickupMs: { p50: number; p99: number; samples: number };
}

/** Results of {@link run}. */
export interface VideoQueueBenchResult {
  pglite: VideoQueueFigures;
  postgres: VideoQueueFigures | { error: string };
}

/** A store to run on: a fresh PGlite directory, or a scratch PostgreSQL database. */
interface Store {
  dataDir: string;
  databaseUrl?: string;
  drop(): Promise<void>;
}

async function pgliteStore(): Promise<Store> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-bench-video-"));
  return { dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
}

async function postgresStore(): Promise<Store> {
  const database = await createTestDatabase(postgresUrl);
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-bench-video-"));
  return {
    dataDir,
    databaseUrl: database.url,
    async drop() {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function serve(store: Store, env: Record<string, string>): Promise<RunningServer> {
  const config = loadServerConfig({ PORT: "0", GRPC_PORT: "0", DATA_DIR: store.dataDir, EMBEDDED_INTERN_HOST: "0", VIDEO_SUBMITS_PER_MINUTE: "1000000", ...env });
  const server = await startServer({ ...config, databaseUrl: store.databaseUrl, bootstrap: true }, pino({ level: "silent" }));
  await server.store.organizations.setCredits(server.bootstrap!.organization_id, 1_000_000_000);
  return server;
}

async function load(options: autocannon.Options) {
  const result = await autocannon({ connections: 16, ...options });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { requestsPerSecond: Math.round(result.requests.average), p99Ms: result.latency.p99 };
}

function percentile(sorted: number[], p: number): number {
  return Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(1));
}

/** Submit and poll throughput on an API-only replica (no workers), so jobs only accumulate. */
async function throughput(store: Store, seconds: number): Promise<Pick<VideoQueueFigures, "submit" | "poll" | "ratio">> {
  const server = await serve(store, { VIDEO_WORKERS: "0" });
  try {
    const headers = { authorization: `Bearer ${server.bootstrap!.api_key}`, "content-type": "application/json" };
    const body = JSON.stringify({ model: "local/test-pattern", prompt: "bench", duration: 1 });
    const url = `${server.httpUrl}/api/v1/videos`;
    await load({ url, method: "POST", headers, body, duration: 1 }); // warm-up
    const submit = await load({ url, method: "POST", headers, body, duration: seconds });
    const job = (await (await fetch(url, { method: "POST", headers, body })).json()) as { polling_url: string };
    const poll = await load({ url: `${server.httpUrl}${job.polling_url}`, headers, duration: seconds });
    return { submit, poll, ratio: Number((submit.requestsPerSecond / poll.requestsPerSecond).toFixed(3)) };
  } finally {
    await server.close();
  }
}

/** Pickup latency: one job at a time, each to idle workers, against an upstream that answers at once. */
async function pickup(store: Store, upstream: FakeOpenAiVideos, samples: number): Promise<VideoQueueFigures["pickupMs"]> {
  const modelsFile = writeVideoModelsFile(store.dataDir, [
    { id: "fake/instant", provider: "openai-videos", slug: "fake", base_url: upstream.baseUrl, api_key: "sk-bench", upstream_model: "sora-2", poll_interval_ms: 1, pricing: {} },
  ]);
  const server = await serve(store, { MODELS_FILE: modelsFile });
  try {
    const headers = { authorization: `Bearer ${server.bootstrap!.api_key}`, "content-type": "application/json" };
    const latencies: number[] = [];
    for (let i = 0; i < samples; i++) {
      const job = (await (await fetch(`${server.httpUrl}/api/v1/videos`, { method: "POST", headers, body: JSON.stringify({ model: "fake/instant", prompt: `pickup ${i}` }) })).json()) as { id: string };
      for (;;) {
        const [row] = await server.store.db.query<{ ms: number | null; status: string }>(
          "SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms, status FROM video_jobs WHERE id = $1",
          [job.id],
        );
        // Wait for the job to finish too, so the next one meets idle workers.
        if (row.ms !== null && row.status === "completed") {
          latencies.push(Number(row.ms));
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    latencies.sort((a, b) => a - b);
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), samples };
  } finally {
    await server.close();
  }
}

async function figures(makeStore: () => Promise<Store>, upstream: FakeOpenAiVideos, seconds: number, samples: number): Promise<VideoQueueFigures> {
  const [first, second] = [await makeStore(), await makeStore()];
  try {
    return { ...(await throughput(first, seconds)), pickupMs: await pickup(second, upstream, samples) };
  } finally {
    await first.drop();
    await second.drop();
  }
}

/**
 * Video job submission and queue pickup on both stores: submit requests/s
 * beside poll requests/s on the same replica, and the time from a committed
 * submit to a worker holding the job (pg-boss fetch, woken by the submit on
 * the same replica, then the lease).
 */
export async function measureVideoQueue(seconds = Number(process.env.BENCH_SECONDS ?? 5), samples = Number(process.env.BENCH_PICKUP_SAMPLES ?? 100)): Promise<VideoQueueBenchResult> {
  const upstream = await startFakeOpenAiVideos("sk-bench");
  try {
    const pglite = await figures(pgliteStore, upstream, seconds, samples);
    const postgres = await figures(postgresStore, upstream, seconds, samples).catch((error: Error) => ({ error: error.message }));
    return { pglite, postgres };
  } finally {
    await upstream.close();
  }
}

function storeRows(store: string, figures: VideoQueueFigures): BenchRow[] {
  const bench = "video-queue";
  const absolute = "— (no target set; reported)";
  return [
    { bench, figure: `submit on ${store}`, value: figures.submit.requestsPerSecond, unit: "req/s", baseline: "poll on the same replica", baselineValue: figures.poll.requestsPerSecond, ratio: figures.ratio, target: "reported", met: null },
    { bench, figure: `submit → worker pickup p50 on ${store}`, value: figures.pickupMs.p50, unit: "ms", baseline: absolute, baselineValue: null, target: "reported", met: null },
    { bench, figure: `submit → worker pickup p99 on ${store}`, value: figures.pickupMs.p99, unit: "ms", baseline: absolute, baselineValue: null, target: "reported", met: null },
  ];
}

/** The bench's rows for `npm run bench`: submit beside poll and queue pickup, per store (PostgreSQL only where it is reachable). */
export async function run(): Promise<BenchReport> {
  const result = await measureVideoQueue();
  const rows = storeRows("PGlite", result.pglite);
  if ("error" in result.postgres) {
    const reason = result.postgres.error.replace(/\|/g, "/").replace(/\n/g, " ").slice(0, 200);
    rows.push({ bench: "video-queue", figure: `PostgreSQL not measured: ${reason}`, value: NaN, unit: "", baseline: "—", baselineValue: null, target: "reported", met: null });
  } else rows.push(...storeRows("PostgreSQL", result.postgres));
  return { rows, detail: result };
}
