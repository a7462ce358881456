import type http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { nsToMs, percentilesOf, roundMs, type Percentiles } from "./percentiles.js";
import { readSse } from "./sse-client.js";
import type { SwitchboardProcesses } from "./switchboard-processes.js";

/** Options for {@link measureFirstChunkLatency}. */
export interface FirstChunkLatencyOptions {
  /** Streams open at once on each path. */
  concurrency: number;
  /** Paced content chunks after the first, so each stream stays open and streaming like a model's answer. */
  chunksPerStream: number;
  gapMs: number;
  /** Sampled window, after the ramp that brings each path to `concurrency` open streams. */
  windowMs: number;
  /** Pause of each client between its streams; 0 keeps `concurrency` streams open all the time. */
  thinkMs?: number;
}

/** Time to first content chunk on one path. */
export interface PathLatency {
  /** Request sent → first content chunk read, milliseconds. */
  firstChunkMs: Percentiles;
  /** Request sent → the agent wrote that chunk (its stamp): the request's way in, through every hop, to the agent and back to its first write. */
  requestLegMs: Percentiles;
  /** The agent wrote the chunk → it was read: the chunk's way out. */
  responseLegMs: Percentiles;
  failedStreams: number;
  /** The first failure's message, when a stream failed. */
  firstFailure?: string;
  /** Streams started per second during the sampled window. */
  streamsPerSecond: number;
  /** Streams read to their end, ramp and window included. */
  completedStreams: number;
}

/** Figures of {@link measureFirstChunkLatency}. */
export interface FirstChunkLatency {
  whole: PathLatency;
  direct: PathLatency;
}

/** Figures of {@link measureBareGatewayFirstChunkLatency}. */
export interface BareGatewayFirstChunkLatency {
  /** Through the bare gateway process. */
  bare: PathLatency;
  direct: PathLatency;
}

/** Figures of {@link measureRelayedFirstChunkLatency}. */
export interface RelayedFirstChunkLatency {
  /** Through the bare relay process. */
  relayed: PathLatency;
  direct: PathLatency;
}

interface Sample {
  firstChunkNs: bigint;
  requestLegNs: bigint;
  responseLegNs: bigint;
}

/** Opens one stream, reads it to its end, and times its first content chunk. */
type StreamProbe = () => Promise<Sample>;

interface PathResult {
  samples: Sample[];
  failures: Error[];
  /** Streams started inside the sampled window. */
  started: number;
  completed: number;
}

/** The first stamp of a content chunk from the scripted agent's `flood-timed` (coalesced chunks hold several). */
function stampOf(content: string): bigint {
  return BigInt(content.trim().split(" ")[0]);
}

/**
 * The whole path: POST …/chat/completions over HTTP/1.1 (keep-alive), read
 * as SSE; `url` may be another gateway's chat URL.
 */
function wholePathProbe(processes: SwitchboardProcesses, agent: http.Agent, prompt: string, url = new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl)): StreamProbe {
  const request = {
    url,
    headers: { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` },
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: prompt }] }),
  };
  return async () => {
    const sentNs = process.hrtime.bigint();
    let firstNs: bigint | undefined;
    let stamp = 0n;
    let finish: string | undefined;
    let done = false;
    await readSse(agent, request, (data) => {
      if (data === "[DONE]") {
        done = true;
        return;
      }
      const choice = (JSON.parse(data) as { choices: { delta: { content?: string }; finish_reason: string | null }[] }).choices[0];
      if (choice?.delta.content !== undefined && firstNs === undefined) {
        firstNs = process.hrtime.bigint();
        stamp = stampOf(choice.delta.content);
      }
      if (choice?.finish_reason) finish = choice.finish_reason;
    });
    if (firstNs === undefined || finish !== "stop" || !done) throw new Error(`stream ended without content or stop (${finish}, done=${done})`);
    return { firstChunkNs: firstNs - sentNs, requestLegNs: stamp - sentNs, responseLegNs: firstNs - stamp };
  };
}

/**
 * The baseline: the same prompt as StartRun straight to the intern host over
 * gRPC (HTTP/2), with the host token; `hostUrl` may be a relay in front of it.
 */
function directProbe(processes: SwitchboardProcesses, prompt: string, hostUrl = processes.hostUrl): StreamProbe {
  // The gateway's own host client options, so the hop is the same one.
  const client = createClient(InternHostService, createGrpcTransport({ baseUrl: hostUrl, pingIntervalMs: 15_000, idleConnectionTimeoutMs: 5 * 60_000 }));
  const headers = { authorization: `Bearer ${processes.hostToken}` };
  return async () => {
    const sentNs = process.hrtime.bigint();
    let firstNs: bigint | undefined;
    let stamp = 0n;
    let finished = false;
    for await (const { event } of client.startRun({ prompt, approvalMode: "self-drive" }, { headers })) {
      const kind = event?.kind;
      if (kind?.case === "content" && firstNs === undefined) {
        firstNs = process.hrtime.bigint();
        stamp = stampOf(kind.value);
      }
      if (kind?.case === "finished") finished = true;
      if (kind?.case === "failed") throw new Error(`run failed: ${kind.value.reason}`);
    }
    if (firstNs === undefined || !finished) throw new Error("stream ended without content or finish");
    return { firstChunkNs: firstNs - sentNs, requestLegNs: stamp - sentNs, responseLegNs: firstNs - stamp };
  };
}

/**
 * Keeps `concurrency` streams open on one path through a ramp and a window:
 * stream starts are spread over one stream's length, so streams come and go
 * at a steady rate rather than in a burst, and only streams started inside
 * the window (when all `concurrency` are open) are sampled.
 */
async function drivePath(probe: StreamProbe, concurrency: number, rampMs: number, windowMs: number, thinkMs: number): Promise<PathResult> {
  const windowStart = performance.now() + rampMs;
  const windowEnd = windowStart + windowMs;
  const samples: Sample[] = [];
  const failures: Error[] = [];
  let started = 0;
  let completed = 0;
  const worker = async (index: number) => {
    await sleep((index * rampMs) / concurrency);
    while (performance.now() < windowEnd) {
      const sampled = performance.now() >= windowStart;
      if (sampled) started++;
      try {
        const sample = await probe();
        completed++;
        if (sampled) samples.push(sample);
      } catch (error) {
        failures.push(error as Error);
        await sleep(50);
      }
      if (thinkMs > 0) await sleep(thinkMs);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, index) => worker(index)));
  // Every stream failing is a broken setup, not a figure.
  if (samples.length === 0 && failures.length > 0) throw new Error(`every stream failed: ${failures[0].message}`);
  return { samples, failures, started, completed };
}

function summarize(result: PathResult, windowMs: number): PathLatency {
  const { samples } = result;
  return {
    firstChunkMs: percentilesOf(samples.map((sample) => nsToMs(sample.firstChunkNs))),
    requestLegMs: percentilesOf(samples.map((sample) => nsToMs(sample.requestLegNs))),
    responseLegMs: percentilesOf(samples.map((sample) => nsToMs(sample.responseLegNs))),
    failedStreams: result.failures.length,
    firstFailure: result.failures[0]?.message,
    streamsPerSecond: roundMs(result.started / (windowMs / 1000)),
    completedStreams: result.completed,
  };
}

/**
 * Time to the first content chunk with `concurrency` streams open on each
 * path: the whole path (HTTP client → bridge → core → gRPC → intern host →
 * agent) and straight from the intern host over gRPC, same prompt. Both
 * paths run at the same time, so on a shared, noisy machine they see the
 * same load at every moment and their difference is what the gateway adds.
 * The prompt makes the scripted agent write a stamped chunk at once, then
 * paced chunks, so each stream stays open about `chunksPerStream × gapMs`
 * like a model answering.
 */
export async function measureFirstChunkLatency(processes: SwitchboardProcesses, agent: http.Agent, options: FirstChunkLatencyOptions): Promise<FirstChunkLatency> {
  const prompt = promptOf(options);
  const [whole, direct] = await drivePaths(wholePathProbe(processes, agent, prompt), directProbe(processes, prompt), options);
  return { whole, direct };
}

/**
 * The same measurement with a bare TCP relay process (`relayUrl`, in front
 * of the host, nothing parsed) in the gateway's place: the same StartRun read
 * through the relay and straight from the host, both at once. What the relay
 * adds is the least any gateway in a process of its own could add on this
 * machine under this load.
 */
export async function measureRelayedFirstChunkLatency(processes: SwitchboardProcesses, relayUrl: string, options: FirstChunkLatencyOptions): Promise<RelayedFirstChunkLatency> {
  const prompt = promptOf(options);
  const [relayed, direct] = await drivePaths(directProbe(processes, prompt, relayUrl), directProbe(processes, prompt), options);
  return { relayed, direct };
}

/**
 * The same measurement with the bare gateway (`chatUrl`: node:http and a
 * minimal gRPC reader, no auth and no core) in the gateway's place, read as
 * SSE beside the host read directly, both at once. What it adds is what the
 * chat path's necessary work costs here, before anything Switchboard adds.
 */
export async function measureBareGatewayFirstChunkLatency(processes: SwitchboardProcesses, agent: http.Agent, chatUrl: string, options: FirstChunkLatencyOptions): Promise<BareGatewayFirstChunkLatency> {
  const prompt = promptOf(options);
  const [bare, direct] = await drivePaths(wholePathProbe(processes, agent, prompt, new URL(chatUrl)), directProbe(processes, prompt), options);
  return { bare, direct };
}

function promptOf(options: FirstChunkLatencyOptions): string {
  return options.chunksPerStream > 0 ? `flood-timed 1\nflood-timed ${options.chunksPerStream} ${options.gapMs}` : "flood-timed 1";
}

/** Drives two paths at once, so they see the same load at every moment. */
async function drivePaths(first: StreamProbe, second: StreamProbe, options: FirstChunkLatencyOptions): Promise<[PathLatency, PathLatency]> {
  // At least a second, which also warms connections and the JIT before sampling.
  const rampMs = Math.max(1_000, options.chunksPerStream * options.gapMs);
  const thinkMs = options.thinkMs ?? 0;
  const results = await Promise.all([
    drivePath(first, options.concurrency, rampMs, options.windowMs, thinkMs),
    drivePath(second, options.concurrency, rampMs, options.windowMs, thinkMs),
  ]);
  return [summarize(results[0], options.windowMs), summarize(results[1], options.windowMs)];
}
