import type http from "node:http";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { startBareGateway } from "./chat-path/bare-gateway.js";
import {
  measureBareGatewayFirstChunkLatency,
  measureFirstChunkLatency,
  measureRelayedFirstChunkLatency,
  type BareGatewayFirstChunkLatency,
  type FirstChunkLatency,
  type FirstChunkLatencyOptions,
  type RelayedFirstChunkLatency,
} from "./chat-path/first-chunk-latency.js";
import { measurePausedRunMemory, type PausedRunMemory } from "./chat-path/paused-run-memory.js";
import { readCpuMs } from "./chat-path/process-stats.js";
import { createBenchAgent } from "./chat-path/sse-client.js";
import { measureStreamThroughput, type StreamThroughput } from "./chat-path/stream-throughput.js";
import { startSwitchboardProcesses, type SwitchboardProcesses } from "./chat-path/switchboard-processes.js";
import { startTcpRelay } from "./chat-path/tcp-relay.js";
import { addedRow, type BenchReport, type BenchRow } from "./bench-row.js";

/** Options for {@link run}; the defaults are what `npm run bench` measures (BENCH_SCALE scales windows and counts). */
export interface ChatPathBenchOptions {
  /** Multiplies the sampled window, the flood and the paused-run count; 1 takes about two to three minutes on a shared 2-core machine. */
  scale?: number;
}

/** The machine while an item ran: the shared machine's 1-minute load average at its start and end. */
export interface Conditions {
  loadAverage1m: { start: number; end: number };
}

/** One figure beside its baseline, measured in the same run, and the target it is judged by. */
export interface ChatPathItem<Figure, Baseline, Detail> {
  figure: Figure;
  baseline: Baseline;
  target: string;
  met: boolean;
  conditions: Conditions;
  detail: Detail;
}

/** Results of {@link run}. */
export interface ChatPathBenchResult {
  machine: { cpus: number; node: string; scale: number };
  /** Added time to the first content chunk at 200 concurrent streams, whole path vs straight from the intern host. */
  firstChunk: ChatPathItem<{ p50Ms: number; p99Ms: number }, { p50Ms: number; p99Ms: number }, FirstChunkDetail> & {
    added: { p50Ms: number; p99Ms: number };
  };
  /** SSE events per second through the whole path vs a bare Node SSE writer sending the same bytes. */
  throughput: ChatPathItem<{ eventsPerSecond: number }, { eventsPerSecond: number }, StreamThroughput> & { ratio: number };
  /** Memory per run paused at a question (gateway + host V8 heap after a full collection; RSS in the detail). */
  pausedRunMemory: ChatPathItem<{ kibPerRun: number }, { gatewayPlusHostHeapKiB: number }, PausedRunMemory> & {
    added: { kib: number };
  };
  meetsTargets: boolean;
}

/** What the first-chunk figures come from, and a reference without load. */
export interface FirstChunkDetail {
  /** The judged measurement: `concurrency` streams open on each path, both paths at once. */
  loaded: FirstChunkLatency & { concurrency: number; streamSeconds: number; chunksPerSecondPerStream: number };
  /** Gateway CPU per whole-path stream (its turn and all its chunks), from /proc: what saturates it first. */
  gatewayCpuMsPerStream: number;
  /** One short stream at a time per path with a pause between: the hop's cost without queueing. */
  unloaded: FirstChunkLatency & { addedP50Ms: number; addedP99Ms: number; gatewayCpuMsPerStream: number };
  /**
   * The loaded measurement again with a bare TCP relay process in the
   * gateway's place (nothing parsed): the least any gateway in a process of
   * its own adds here. Lighter than the judged run (no gateway work), so it
   * understates the hop's cost there.
   */
  relayed: RelayedFirstChunkLatency & { addedP50Ms: number; addedP99Ms: number };
  /**
   * The loaded measurement again with a bare gateway process in the
   * gateway's place (node:http and a minimal HTTP/2 gRPC reader; no auth,
   * core, logs or metrics): what the necessary work adds here, before
   * anything of ours.
   */
  bareGateway: BareGatewayFirstChunkLatency & { addedP50Ms: number; addedP99Ms: number; gatewayCpuMsPerStream: number };
}

const targets = { addedP50Ms: 1, addedP99Ms: 5, throughputRatio: 0.5, kibPerPausedRun: 50 };

/** A measurement and the conditions it ran under. */
type Measured<T> = { value: T; conditions: Conditions };

async function withConditions<T>(measure: () => Promise<T>): Promise<Measured<T>> {
  const start = loadavg()[0];
  const value = await measure();
  return { value, conditions: { loadAverage1m: { start: round(start, 2), end: round(loadavg()[0], 2) } } };
}

function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Items 1 and 2, on one gateway + host + agent: the unloaded reference, the loaded latency, the throughput. */
async function measureStreaming(scale: number) {
  const unloadedOptions = { concurrency: 1, chunksPerStream: 0, gapMs: 0, thinkMs: 20, windowMs: Math.max(2_000, Math.round(10_000 * scale)) };
  const loadedOptions = { concurrency: 200, chunksPerStream: 40, gapMs: 100, windowMs: Math.max(2_000, Math.round(20_000 * scale)) };
  const throughputOptions = { streams: 8, chunksPerStream: Math.max(500, Math.round(5_000 * scale)), chunkSize: 8, rounds: 2 };
  const processes = await startSwitchboardProcesses();
  const agent = createBenchAgent();
  const gatewayCpuMs = () => processes.cpuMs("gateway") ?? NaN;
  try {
    let cpuBefore = gatewayCpuMs();
    const unloaded = await measureFirstChunkLatency(processes, agent, unloadedOptions);
    const unloadedCpuMs = gatewayCpuMs() - cpuBefore;
    cpuBefore = gatewayCpuMs();
    const loaded = await withConditions(() => measureFirstChunkLatency(processes, agent, loadedOptions));
    const loadedCpuMs = gatewayCpuMs() - cpuBefore;
    const relayed = await measureThroughRelay(processes, loadedOptions);
    const bareGateway = await measureThroughBareGateway(processes, agent, loadedOptions);
    const throughput = await withConditions(() => measureStreamThroughput(processes, agent, throughputOptions));
    return { loadedOptions, unloaded, unloadedCpuMs, loaded, loadedCpuMs, relayed, bareGateway, throughput };
  } finally {
    agent.destroy();
    await processes.stop();
  }
}

async function measureThroughRelay(processes: SwitchboardProcesses, options: FirstChunkLatencyOptions) {
  const relay = await startTcpRelay(processes.hostUrl);
  try {
    return await measureRelayedFirstChunkLatency(processes, relay.url, options);
  } finally {
    await relay.stop();
  }
}

async function measureThroughBareGateway(processes: SwitchboardProcesses, agent: http.Agent, options: FirstChunkLatencyOptions) {
  const gateway = await startBareGateway(processes.hostUrl, processes.hostToken);
  try {
    const cpuBefore = readCpuMs(gateway.pid) ?? NaN;
    const latency = await measureBareGatewayFirstChunkLatency(processes, agent, gateway.url, options);
    return { ...latency, cpuMs: (readCpuMs(gateway.pid) ?? NaN) - cpuBefore };
  } finally {
    await gateway.stop();
  }
}

function firstChunkItem(streaming: Awaited<ReturnType<typeof measureStreaming>>): ChatPathBenchResult["firstChunk"] {
  const { loadedOptions, unloaded, loaded, relayed, bareGateway } = streaming;
  const { whole, direct } = loaded.value;
  const added = { p50Ms: round(whole.firstChunkMs.p50 - direct.firstChunkMs.p50), p99Ms: round(whole.firstChunkMs.p99 - direct.firstChunkMs.p99) };
  return {
    figure: { p50Ms: whole.firstChunkMs.p50, p99Ms: whole.firstChunkMs.p99 },
    baseline: { p50Ms: direct.firstChunkMs.p50, p99Ms: direct.firstChunkMs.p99 },
    added,
    target: `added ≤ ${targets.addedP50Ms} ms p50 and ≤ ${targets.addedP99Ms} ms p99`,
    met: added.p50Ms <= targets.addedP50Ms && added.p99Ms <= targets.addedP99Ms,
    conditions: loaded.conditions,
    detail: {
      loaded: {
        ...loaded.value,
        concurrency: loadedOptions.concurrency,
        streamSeconds: (loadedOptions.chunksPerStream * loadedOptions.gapMs) / 1000,
        chunksPerSecondPerStream: 1000 / loadedOptions.gapMs,
      },
      gatewayCpuMsPerStream: round(streaming.loadedCpuMs / whole.completedStreams),
      unloaded: {
        ...unloaded,
        addedP50Ms: round(unloaded.whole.firstChunkMs.p50 - unloaded.direct.firstChunkMs.p50),
        addedP99Ms: round(unloaded.whole.firstChunkMs.p99 - unloaded.direct.firstChunkMs.p99),
        gatewayCpuMsPerStream: round(streaming.unloadedCpuMs / unloaded.whole.completedStreams),
      },
      relayed: {
        ...relayed,
        addedP50Ms: round(relayed.relayed.firstChunkMs.p50 - relayed.direct.firstChunkMs.p50),
        addedP99Ms: round(relayed.relayed.firstChunkMs.p99 - relayed.direct.firstChunkMs.p99),
      },
      bareGateway: {
        bare: bareGateway.bare,
        direct: bareGateway.direct,
        addedP50Ms: round(bareGateway.bare.firstChunkMs.p50 - bareGateway.direct.firstChunkMs.p50),
        addedP99Ms: round(bareGateway.bare.firstChunkMs.p99 - bareGateway.direct.firstChunkMs.p99),
        gatewayCpuMsPerStream: round(bareGateway.cpuMs / bareGateway.bare.completedStreams),
      },
    },
  };
}

function throughputItem(throughput: Measured<StreamThroughput>): ChatPathBenchResult["throughput"] {
  const ratio = round(throughput.value.whole.eventsPerSecond / throughput.value.bare.eventsPerSecond);
  return {
    figure: { eventsPerSecond: throughput.value.whole.eventsPerSecond },
    baseline: { eventsPerSecond: throughput.value.bare.eventsPerSecond },
    ratio,
    target: `ratio ≥ ${targets.throughputRatio}`,
    met: ratio >= targets.throughputRatio,
    conditions: throughput.conditions,
    detail: throughput.value,
  };
}

function pausedRunMemoryItem(memory: Measured<PausedRunMemory>): ChatPathBenchResult["pausedRunMemory"] {
  const { before, perRun, paused, requested } = memory.value;
  const kibPerRun = round(perRun.gatewayPlusHostHeap / 1024, 2);
  const heap = (process: { heapUsed: number; external: number }) => process.heapUsed + process.external;
  return {
    figure: { kibPerRun },
    baseline: { gatewayPlusHostHeapKiB: Math.round((heap(before.gateway) + heap(before.host)) / 1024) },
    added: { kib: Math.round((perRun.gatewayPlusHostHeap * paused) / 1024) },
    target: `≤ ${targets.kibPerPausedRun} KiB per paused run with ${requested} paused (gateway + host V8 heap after a full collection)`,
    met: kibPerRun <= targets.kibPerPausedRun && paused >= requested,
    conditions: memory.conditions,
    detail: memory.value,
  };
}

/**
 * The whole chat path (HTTP client → bridge → core → gRPC → intern host →
 * scripted ACP agent), each figure beside its baseline in the same run, with
 * the gateway, the host and the agent in their own processes as deployed and
 * this process as the only client:
 *
 * 1. Time to the first content chunk with 200 streams open on each path,
 *    through the gateway and straight from the host over gRPC, both at once
 *    (and, for reference, one stream at a time).
 * 2. SSE events per second through the gateway against a bare node:http SSE
 *    writer replaying the very bytes the gateway sent.
 * 3. Memory per run paused at a question, 5,000 of them, on fresh processes.
 *
 * Figures are reported, never asserted: the machine is shared, so each item
 * carries the load average it ran under.
 */
export async function measureChatPath(options: ChatPathBenchOptions = {}): Promise<ChatPathBenchResult> {
  const scale = options.scale ?? Number(process.env.BENCH_SCALE ?? 1);
  if (!(scale > 0)) throw new Error("BENCH_SCALE must be a positive number.");
  const streaming = await measureStreaming(scale);
  const memory = await withConditions(() => measurePausedRunMemory({ pausedRuns: Math.max(100, Math.round(5_000 * scale)), concurrency: 32 }));
  const firstChunk = firstChunkItem(streaming);
  const throughput = throughputItem(streaming.throughput);
  const pausedRunMemory = pausedRunMemoryItem(memory);
  return {
    machine: { cpus: availableParallelism(), node: process.version, scale },
    firstChunk,
    throughput,
    pausedRunMemory,
    meetsTargets: firstChunk.met && throughput.met && pausedRunMemory.met,
  };
}

/**
 * The most the whole path could carry if the gateway and the host cost
 * nothing: the agent is one process on one core, and its own CPU per event
 * (ACP messages it writes for each event the client receives) caps the
 * events per second, whatever sits behind it.
 */
function agentCeilingRow(bench: string, throughput: ChatPathBenchResult["throughput"]): BenchRow {
  const agentMsPerEvent = throughput.detail.whole.cpuMsPerEvent.agent;
  const ceiling = Math.round(1000 / agentMsPerEvent);
  return {
    bench,
    figure: `ceiling set by the agent process alone (${agentMsPerEvent} ms of its CPU per event, one core)`,
    value: ceiling,
    unit: "events/s",
    baseline: "bare Node SSE writer, same bytes",
    baselineValue: throughput.baseline.eventsPerSecond,
    ratio: round(ceiling / throughput.baseline.eventsPerSecond),
    target: "reported (the best ratio any gateway could reach here)",
    met: null,
  };
}

/** The least any gateway process could add here: the same load read through a bare TCP relay in its place. */
function relayRows(bench: string, relayed: FirstChunkDetail["relayed"], concurrency: number): BenchRow[] {
  const baseline = "same streams read from the host over gRPC, same run";
  const target = "reported (what one more process hop adds here, before any gateway work)";
  return (["p50", "p99"] as const).map((at) =>
    addedRow({
      bench,
      figure: `time to first chunk ${at}, ${concurrency} concurrent streams, through a bare TCP relay process in the gateway's place (nothing parsed)`,
      value: relayed.relayed.firstChunkMs[at],
      unit: "ms",
      baseline,
      baselineValue: relayed.direct.firstChunkMs[at],
      target,
      maxAdded: null,
    }),
  );
}

/** What the necessary work adds here: the same load through the bare gateway (node:http and a minimal gRPC reader) in our gateway's place. */
function bareGatewayRows(bench: string, bareGateway: FirstChunkDetail["bareGateway"], concurrency: number): BenchRow[] {
  return (["p50", "p99"] as const).map((at) =>
    addedRow({
      bench,
      figure: `time to first chunk ${at}, ${concurrency} concurrent streams, through a bare gateway process in our gateway's place (node:http and a minimal HTTP/2 gRPC reader; no auth, core, logs or metrics; ${bareGateway.gatewayCpuMsPerStream} ms of its CPU per stream)`,
      value: bareGateway.bare.firstChunkMs[at],
      unit: "ms",
      baseline: "same streams read from the host over gRPC, same run",
      baselineValue: bareGateway.direct.firstChunkMs[at],
      target: "reported (what the path's necessary work adds here, before anything of ours)",
      maxAdded: null,
    }),
  );
}

/** The bench's rows for `npm run bench`: each chat-path item as rows beside its same-run baseline. */
export async function run(options: ChatPathBenchOptions = {}): Promise<BenchReport> {
  const result = await measureChatPath(options);
  const bench = "chat-path";
  const { firstChunk, throughput, pausedRunMemory } = result;
  const concurrency = firstChunk.detail.loaded.concurrency;
  const fromHost = "same streams read from the host over gRPC";
  return {
    rows: [
      addedRow({ bench, figure: `time to first chunk p50, ${concurrency} concurrent streams`, value: firstChunk.figure.p50Ms, unit: "ms", baseline: fromHost, baselineValue: firstChunk.baseline.p50Ms, target: `added ≤ ${targets.addedP50Ms} ms`, maxAdded: targets.addedP50Ms }),
      addedRow({ bench, figure: `time to first chunk p99, ${concurrency} concurrent streams`, value: firstChunk.figure.p99Ms, unit: "ms", baseline: fromHost, baselineValue: firstChunk.baseline.p99Ms, target: `added ≤ ${targets.addedP99Ms} ms`, maxAdded: targets.addedP99Ms }),
      ...relayRows(bench, firstChunk.detail.relayed, concurrency),
      ...bareGatewayRows(bench, firstChunk.detail.bareGateway, concurrency),
      { bench, figure: "SSE events/s through the whole path", value: throughput.figure.eventsPerSecond, unit: "events/s", baseline: "bare Node SSE writer, same bytes", baselineValue: throughput.baseline.eventsPerSecond, ratio: throughput.ratio, target: `≥ ${targets.throughputRatio}×`, met: throughput.met },
      agentCeilingRow(bench, throughput),
      { bench, figure: `memory per run paused at a question, ${pausedRunMemory.detail.requested} paused`, value: pausedRunMemory.figure.kibPerRun, unit: "KiB", baseline: "— (absolute target; before state = the same processes before the runs)", baselineValue: null, target: `≤ ${targets.kibPerPausedRun} KiB`, met: pausedRunMemory.met },
    ],
    detail: result,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
}
