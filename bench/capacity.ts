import http from "node:http";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { roundTo, type BenchReport } from "./bench-row.js";
import { createBenchAgent } from "./chat-path/sse-client.js";
import { startSwitchboardProcesses, type SwitchboardProcesses } from "./chat-path/switchboard-processes.js";

/** Options for {@link measureCapacity}; the defaults are what `npm run bench` measures. */
export interface CapacityOptions {
  /** Silent SSE chat streams held open at once (BENCH_CAPACITY_STREAMS). */
  streams?: number;
  /** Streams being opened at once, so the gateway is not asked to accept thousands of turns in one tick. */
  openConcurrency?: number;
  /** The gateway's heartbeat interval: the silence after which it writes `: keepalive`. */
  heartbeatMs?: number;
  /** How long to wait for every stream's first keepalive once all are open. */
  keepaliveBudgetMs?: number;
}

/** Figures of {@link measureCapacity}. */
export interface Capacity {
  requested: number;
  /** Lowered from `requested` when the open-file limit is too low; the reason is in `limitedBy`. */
  streams: number;
  limitedBy: string | null;
  opened: number;
  /** Streams that received at least one `: keepalive` comment. */
  keptAlive: number;
  failures: Record<string, number>;
  /** Gateway VmRSS, bytes, each read after a forced full collection: after a warm-up and before the streams, and with them all open. */
  gatewayRssBefore: number;
  gatewayRssWithStreams: number;
  hostRssBefore: number;
  hostRssWithStreams: number;
  /** V8 heap used after a forced full collection, bytes: garbage left out, unlike RSS. */
  heapAfterCollection: { gatewayBefore: number; gatewayWithStreams: number; hostBefore: number; hostWithStreams: number };
  secondsToOpen: number;
}

/** Each stream costs the client one socket and the gateway one socket plus a little: keep a margin for both. */
const fdsPerStream = 1;
const fdMargin = 512;

function openFileLimit(): number {
  const limits = readFileSync("/proc/self/limits", "utf8");
  const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
  return soft === undefined || soft === "unlimited" ? Infinity : Number(soft);
}

/** One silent turn: the scripted agent sleeps far past the window, so only the gateway's heartbeats reach the client. */
function openSilentStream(processes: SwitchboardProcesses, agent: http.Agent, onKeepalive: () => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ stream: true, messages: [{ role: "user", content: "sleep 3600000" }] });
    const request = http.request(
      new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl),
      { agent, method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` } },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          reject(new Error(`HTTP ${response.statusCode}`));
          return;
        }
        let seen = false;
        response.setEncoding("utf8");
        response.on("data", (piece: string) => {
          if (!seen && piece.includes(": keepalive")) {
            seen = true;
            onKeepalive();
          }
        });
        response.on("error", () => undefined);
        resolve(request);
      },
    );
    request.once("error", reject);
    request.end(body);
  });
}

/**
 * One gateway holding `streams` concurrent SSE chat streams open and silent
 * (the agent sleeps inside its turn), each of which must receive the
 * gateway's `: keepalive`; the gateway's RSS with them all open against the
 * same process before them.
 */
export async function measureCapacity(options: CapacityOptions = {}): Promise<Capacity> {
  const requested = options.streams ?? Number(process.env.BENCH_CAPACITY_STREAMS ?? 5_000);
  const heartbeatMs = options.heartbeatMs ?? 1_000;
  const limit = openFileLimit();
  const affordable = Math.floor((limit - fdMargin) / fdsPerStream);
  const streams = Math.max(1, Math.min(requested, affordable));
  const limitedBy = streams < requested ? `open-file limit (ulimit -n) is ${limit}: ${requested} streams need about ${requested * fdsPerStream + fdMargin}; measured ${streams}` : null;
  if (limitedBy) process.stderr.write(`capacity: ${limitedBy}\n`);

  const processes = await startSwitchboardProcesses({ gatewayEnv: { HEARTBEAT_MS: String(heartbeatMs), LOG_LEVEL: "warn" } });
  const agent = createBenchAgent();
  const requests: http.ClientRequest[] = [];
  try {
    // Warm-up: the first turns load code and fill caches that are not per-stream memory.
    const warm = await Promise.all(Array.from({ length: 8 }, () => openSilentStream(processes, agent, () => undefined)));
    for (const request of warm) request.destroy();
    await sleep(2_000);
    // Both states are read after a forced full collection: RSS read at an arbitrary point of the GC cycle moved
    // by hundreds of MiB between runs (garbage of the start and the warm-up), more than the streams' own memory.
    const [gatewayHeapBefore, hostHeapBefore] = [await heapAfterCollection(processes, "gateway"), await heapAfterCollection(processes, "host")];
    const gatewayRssBefore = processes.rss("gateway")?.rss ?? NaN;
    const hostRssBefore = processes.rss("host")?.rss ?? NaN;

    let keptAlive = 0;
    let next = 0;
    const failures: Record<string, number> = {};
    const started = performance.now();
    const opener = async () => {
      while (next < streams) {
        next++;
        await openSilentStream(processes, agent, () => keptAlive++).then(
          (request) => requests.push(request),
          (error: Error) => void (failures[error.message] = (failures[error.message] ?? 0) + 1),
        );
      }
    };
    await Promise.all(Array.from({ length: options.openConcurrency ?? 100 }, opener));
    const secondsToOpen = roundTo((performance.now() - started) / 1000, 2);
    const deadline = Date.now() + (options.keepaliveBudgetMs ?? Math.max(10_000, 5 * heartbeatMs));
    while (keptAlive < requests.length && Date.now() < deadline) await sleep(100);
    // After the keepalives were counted: a full collection with thousands of streams open pauses the process.
    const [gatewayHeapWithStreams, hostHeapWithStreams] = [await heapAfterCollection(processes, "gateway"), await heapAfterCollection(processes, "host")];
    const gatewayRssWithStreams = processes.rss("gateway")?.rss ?? NaN;
    const hostRssWithStreams = processes.rss("host")?.rss ?? NaN;
    return {
      requested,
      streams,
      limitedBy,
      opened: requests.length,
      keptAlive,
      failures,
      gatewayRssBefore,
      gatewayRssWithStreams,
      hostRssBefore,
      hostRssWithStreams,
      heapAfterCollection: { gatewayBefore: gatewayHeapBefore, gatewayWithStreams: gatewayHeapWithStreams, hostBefore: hostHeapBefore, hostWithStreams: hostHeapWithStreams },
      secondsToOpen,
    };
  } finally {
    for (const request of requests) request.destroy();
    agent.destroy();
    await processes.stop();
  }
}

async function heapAfterCollection(processes: SwitchboardProcesses, which: "gateway" | "host"): Promise<number> {
  const probe = await processes.probeHeap(which);
  return probe.collected ? probe.after.heapUsed : NaN;
}

/** The bench's rows for `npm run bench`: keepalives delivered to every open stream, and memory per stream (gateway RSS; gateway and host heap). */
export async function run(): Promise<BenchReport> {
  const result = await measureCapacity();
  const bench = "capacity";
  const mib = (bytes: number) => roundTo(bytes / 1024 / 1024, 1);
  const before = "the same gateway before the streams";
  const limited = result.limitedBy ? ` (${result.limitedBy})` : "";
  const heap = result.heapAfterCollection;
  const perStreamKiB = (bytes: number) => roundTo(bytes / 1024 / Math.max(1, result.opened), 1);
  return {
    rows: [
      { bench, figure: `silent SSE streams open at once, each with a \`: keepalive\`${limited}`, value: result.keptAlive, unit: "streams", baseline: "streams asked for", baselineValue: result.requested, ratio: roundTo(result.keptAlive / result.requested), target: "every stream kept alive", met: result.keptAlive === result.requested },
      { bench, figure: `gateway RSS with ${result.opened} streams open (read after a full collection)`, value: mib(result.gatewayRssWithStreams), unit: "MiB", baseline: before, baselineValue: mib(result.gatewayRssBefore), added: mib(result.gatewayRssWithStreams - result.gatewayRssBefore), target: "reported", met: null },
      { bench, figure: "gateway RSS per open stream", value: perStreamKiB(result.gatewayRssWithStreams - result.gatewayRssBefore), unit: "KiB", baseline: `— (absolute; before state = ${before})`, baselineValue: null, target: "reported", met: null },
      { bench, figure: "gateway V8 heap per open stream, after a full collection", value: perStreamKiB(heap.gatewayWithStreams - heap.gatewayBefore), unit: "KiB", baseline: `— (absolute; before state = ${before})`, baselineValue: null, target: "reported", met: null },
      { bench, figure: "intern host V8 heap per open run, after a full collection", value: perStreamKiB(heap.hostWithStreams - heap.hostBefore), unit: "KiB", baseline: "— (absolute; before state = the same host before the streams)", baselineValue: null, target: "reported", met: null },
    ],
    detail: result,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
