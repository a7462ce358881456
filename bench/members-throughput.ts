import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import { freePort } from "../test/support/free-port.js";
import { spawnBenchChild, type BenchChild } from "./bench-child.js";
import { ratioRow, roundTo, type BenchReport } from "./bench-row.js";

/** Results of {@link run}: the bridge beside a bare route, same load, same run. */
export interface MembersBenchResult {
  bridge: { requestsPerSecond: number; p99Ms: number };
  bare: { requestsPerSecond: number; p99Ms: number };
  /** Our own HTTP listener serving the same JSON with no core call: what the HTTP layer alone keeps of the bare rate. */
  httpLayerOnly: { requestsPerSecond: number; p99Ms: number };
  /** bridge req/s ÷ bare req/s; the target is at least 0.7. */
  ratio: number;
  target: number;
  met: boolean;
  loadAverage: number;
}

const root = join(import.meta.dirname, "..");

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function load(url: string, headers: Record<string, string>, seconds: number) {
  const result = await autocannon({ url, headers, connections: 32, duration: seconds });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { requestsPerSecond: Math.round(result.requests.average), p99Ms: result.latency.p99 };
}

/**
 * Member listing through the whole stack (bridge → auth interceptor with the
 * key cache warm → OrganizationService → its page cache, warm, over the
 * embedded store) beside a bare Fastify route returning the same JSON. Each server runs in a process of its
 * own and the load generator in this one, so neither shares an event loop
 * with the load.
 */
export async function measureMembersThroughput(seconds = Number(process.env.BENCH_SECONDS ?? 5)): Promise<MembersBenchResult> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-bench-"));
  let server: ChildProcess | undefined;
  const references: BenchChild[] = [];
  try {
    const port = await freePort();
    const env = { ...process.env, DATA_DIR: dataDir, PORT: String(port), GRPC_PORT: String(await freePort()), EMBEDDED_INTERN_HOST: "0", VIDEO_WORKERS: "0", LOG_LEVEL: "warn" };
    server = spawn(process.execPath, ["bin/switchboard.js", "serve"], { cwd: root, env, stdio: "ignore" });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => existsSync(join(dataDir, "bootstrap.json")) && (await fetch(`${base}/readyz`)).ok, "the server");
    const tenant = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8"));
    const admin = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    for (let i = 0; i < 19; i++) {
      await fetch(`${base}/switchboard.admin.v1.AdminService/AddMember`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${admin}` },
        body: JSON.stringify({ orgId: tenant.organization_id, email: `bench${i}@example.com`, firstName: "B", lastName: String(i), role: "org:member" }),
      });
    }
    const headers = { authorization: `Bearer ${tenant.management_key}` };
    const url = `${base}/api/v1/organization/members?limit=20`;
    const bodyFile = join(dataDir, "members.json");
    writeFileSync(bodyFile, await (await fetch(url, { headers })).text());

    const bare = await spawnBenchChild(join(root, "bench/bare-json-server.ts"), [bodyFile], "The bare Fastify route");
    references.push(bare);
    const httpLayer = await spawnBenchChild(join(root, "bench/http-layer-server.ts"), [bodyFile], "The HTTP-layer reference");
    references.push(httpLayer);

    await load(url, headers, 1); // warm-up: JIT, the key cache and the page cache
    const bridge = await load(url, headers, seconds);
    const bareResult = await load(`${bare.url}/members`, {}, seconds);
    const httpLayerUrl = `${httpLayer.url}/api/v1/members-without-core`;
    await load(httpLayerUrl, {}, 1);
    const httpLayerOnly = await load(httpLayerUrl, {}, seconds);
    const ratio = Number((bridge.requestsPerSecond / bareResult.requestsPerSecond).toFixed(3));
    const { loadavg } = await import("node:os");
    return { bridge, bare: bareResult, httpLayerOnly, ratio, target: 0.7, met: ratio >= 0.7, loadAverage: Number(loadavg()[0].toFixed(2)) };
  } finally {
    server?.kill("SIGTERM");
    await Promise.all(references.map((reference) => reference.stop()));
    await sleep(300);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The bench's rows for `npm run bench`: the bridge's listing rate judged against the bare route's. */
export async function run(): Promise<BenchReport> {
  const result = await measureMembersThroughput();
  const bench = "members-throughput";
  const baseline = "bare Fastify route, same JSON";
  return {
    rows: [
      ratioRow({ bench, figure: "member listing through the bridge (PGlite; key and page caches warm)", value: result.bridge.requestsPerSecond, unit: "req/s", baseline, baselineValue: result.bare.requestsPerSecond, target: "≥ 0.7×", minRatio: 0.7 }),
      {
        bench,
        figure: "the same JSON from our own HTTP listener without any core call (request id, metrics, log line, bridge hooks, compiled serializer; no auth)",
        value: result.httpLayerOnly.requestsPerSecond,
        unit: "req/s",
        baseline,
        baselineValue: result.bare.requestsPerSecond,
        ratio: roundTo(result.httpLayerOnly.requestsPerSecond / result.bare.requestsPerSecond),
        target: "reported (what the HTTP layer alone keeps of the bare rate, before the core's share)",
        met: null,
      },
      { bench, figure: "member listing p99 latency", value: result.bridge.p99Ms, unit: "ms", baseline, baselineValue: result.bare.p99Ms, target: "reported", met: null },
    ],
    detail: result,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(JSON.stringify(await run(), null, 2) + "\n");
