import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InternHostService } from "../src/gen/switchboard/host/v1/host_pb.js";
import { freePort } from "../test/support/free-port.js";
import { addedRow, roundTo, type BenchReport, type BenchRow } from "./bench-row.js";
import { guardChild, releaseChild } from "./chat-path/orphan-guard.js";
import { percentilesOf, type Percentiles } from "./chat-path/percentiles.js";
import { readCpuMs } from "./chat-path/process-stats.js";
import { createBenchAgent } from "./chat-path/sse-client.js";
import { startSwitchboardProcesses } from "./chat-path/switchboard-processes.js";
import { startOpenAiSseUpstream } from "./portkey/openai-sse-upstream.js";

/** Options for {@link measurePeerComparison}; the defaults are what `npm run bench` measures (BENCH_SCALE scales the streams). */
export interface PeerComparisonOptions {
  chunksPerStream?: number;
  chunkSize?: number;
  /** Streams in flight at once on every path. */
  concurrency?: number;
  /** Streams measured per path (after a warm-up of `concurrency` streams). */
  streams?: number;
}

/** One path's figures over its measured streams. */
export interface PathFigures {
  firstChunkMs: Percentiles;
  /** Content chunks reaching the client per wall second, counted as content characters ÷ chunk size (a hop may coalesce chunks). */
  chunksPerSecond: number;
  /** CPU of the gateway process in the path per content chunk; null for a baseline path without a gateway. */
  gatewayCpuMsPerChunk: number | null;
  failures: number;
  firstFailure?: string;
}

/** Figures of {@link measurePeerComparison}: each gateway beside the upstream it fronts, read directly. */
export interface PeerComparison {
  chunksPerStream: number;
  chunkSize: number;
  concurrency: number;
  streams: number;
  upstreamDirect: PathFigures;
  portkey: PathFigures | { error: string };
  hostDirect: PathFigures;
  switchboard: PathFigures;
}

/** One stream: ms to the first content chunk and the content characters it carried. */
interface StreamSample {
  firstChunkMs: number;
  characters: number;
}

type StreamProbe = () => Promise<StreamSample>;

const require = createRequire(import.meta.url);
const startBudgetMs = 30_000;
/** Works around Portkey's known `TypeError: immutable` on Node's fetch responses (see the file). */
const mutableFetchResponse = pathToFileURL(fileURLToPath(new URL("./portkey/mutable-fetch-response.mjs", import.meta.url))).href;

/** Reads an OpenAI-style SSE response, parsing each event as a client SDK would. */
function sseProbe(url: string, headers: Record<string, string>, body: string, agent: http.Agent): StreamProbe {
  return () =>
    new Promise((resolve, reject) => {
      const sent = performance.now();
      const request = http.request(url, { agent, method: "POST", headers }, (response) => {
        if (response.statusCode !== 200) {
          let text = "";
          response.setEncoding("utf8").on("data", (piece) => (text += piece));
          response.once("end", () => reject(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`)));
          return;
        }
        let firstChunkMs = NaN;
        let characters = 0;
        let pending = "";
        response.setEncoding("utf8");
        response.on("data", (piece: string) => {
          pending += piece;
          for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
            const block = pending.slice(0, end);
            pending = pending.slice(end + 2);
            if (!block.startsWith("data: ") || block === "data: [DONE]") continue;
            const content = (JSON.parse(block.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content ?? "";
            if (content && Number.isNaN(firstChunkMs)) firstChunkMs = performance.now() - sent;
            characters += content.length;
          }
        });
        response.once("end", () => resolve({ firstChunkMs, characters }));
        response.once("error", reject);
      });
      request.once("error", reject);
      request.end(body);
    });
}

/** Reads a run straight from the intern host over gRPC: Switchboard's baseline, the hop the gateway adds left out. */
function hostProbe(hostUrl: string, hostToken: string, prompt: string): StreamProbe {
  const client = createClient(InternHostService, createGrpcTransport({ baseUrl: hostUrl }));
  const headers = { authorization: `Bearer ${hostToken}` };
  return async () => {
    const sent = performance.now();
    let firstChunkMs = NaN;
    let characters = 0;
    for await (const { event } of client.startRun({ prompt, approvalMode: "self-drive" }, { headers })) {
      if (event?.kind.case === "content") {
        if (Number.isNaN(firstChunkMs)) firstChunkMs = performance.now() - sent;
        characters += event.kind.value.length;
      }
      if (event?.kind.case === "failed") throw new Error(`run failed: ${event.kind.value.reason}`);
    }
    return { firstChunkMs, characters };
  };
}

/** Runs `streams` streams `concurrency` at a time (after a warm-up round) and sums up the path. */
async function drive(probe: StreamProbe, options: Required<PeerComparisonOptions>, gatewayPid: number | null): Promise<PathFigures> {
  const pool = async (count: number) => {
    const samples: StreamSample[] = [];
    const failures: Error[] = [];
    let next = 0;
    const worker = async () => {
      while (next < count) {
        next++;
        await probe().then((sample) => samples.push(sample), (error: Error) => failures.push(error));
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    return { samples, failures };
  };
  await pool(options.concurrency);
  const cpuBefore = gatewayPid === null ? null : readCpuMs(gatewayPid);
  const started = performance.now();
  const { samples, failures } = await pool(options.streams);
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = gatewayPid === null ? null : readCpuMs(gatewayPid);
  const chunks = samples.reduce((sum, sample) => sum + sample.characters, 0) / options.chunkSize;
  return {
    firstChunkMs: percentilesOf(samples.map((sample) => sample.firstChunkMs)),
    chunksPerSecond: Math.round(chunks / seconds),
    gatewayCpuMsPerChunk: cpuBefore === null || cpuAfter === null || chunks === 0 ? null : roundTo((cpuAfter - cpuBefore) / chunks, 4),
    failures: failures.length,
    firstFailure: failures[0]?.message,
  };
}

/** Starts the Portkey gateway's own CLI (`build/start-server.js --port=N --headless`) and waits for its `/`. */
async function startPortkey(): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const entry = join(dirname(require.resolve("@portkey-ai/gateway/package.json")), "build", "start-server.js");
  const port = await freePort();
  let output = "";
  const child = spawn(process.execPath, ["--import", mutableFetchResponse, entry, `--port=${port}`, "--headless"], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "production" } });
  guardChild(child.pid!);
  // Portkey logs every request; keep only a tail for an error message.
  const keep = (piece: Buffer) => void (output = (output + piece.toString()).slice(-2_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([new Promise((resolve) => child.once("exit", resolve)), sleep(5_000).then(() => child.kill("SIGKILL"))]);
    }
    releaseChild(child.pid!);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + startBudgetMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    if (await fetch(url).then((response) => response.ok, () => false)) return { url, process: child, stop };
    await sleep(100);
  }
  await stop();
  throw new Error(`Portkey did not start (exit ${child.exitCode}): ${output.trim().slice(-500)}`);
}

/**
 * Switchboard's chat path beside a peer AI gateway, Portkey, at the same
 * concurrency and the same chunks: Portkey in front of a local OpenAI-style
 * upstream against that upstream read directly, and Switchboard's gateway in
 * front of the intern host (scripted agent) against the host read directly.
 * Each gateway is judged by what it adds to its own baseline, measured in the
 * same run.
 */
export async function measurePeerComparison(options: PeerComparisonOptions = {}): Promise<PeerComparison> {
  const scale = Number(process.env.BENCH_SCALE ?? 1);
  const resolved: Required<PeerComparisonOptions> = {
    chunksPerStream: options.chunksPerStream ?? 200,
    chunkSize: options.chunkSize ?? 32,
    concurrency: options.concurrency ?? 16,
    streams: options.streams ?? Math.max(32, Math.round(320 * scale)),
  };
  const agent = createBenchAgent();
  const upstream = await startOpenAiSseUpstream({ chunks: resolved.chunksPerStream, chunkSize: resolved.chunkSize });
  try {
    const body = JSON.stringify({ model: "bench", stream: true, messages: [{ role: "user", content: "hello" }] });
    const json = { "content-type": "application/json", authorization: "Bearer sk-bench" };
    const upstreamDirect = await drive(sseProbe(`${upstream.baseUrl}/chat/completions`, json, body, agent), resolved, null);
    let portkey: PathFigures | { error: string };
    try {
      const gateway = await startPortkey();
      try {
        const headers = { ...json, "x-portkey-provider": "openai", "x-portkey-custom-host": upstream.baseUrl };
        portkey = await drive(sseProbe(`${gateway.url}/v1/chat/completions`, headers, body, agent), resolved, gateway.process.pid!);
      } finally {
        await gateway.stop();
      }
    } catch (error) {
      portkey = { error: (error as Error).message };
    }
    const prompt = `flood ${resolved.chunksPerStream} ${resolved.chunkSize}`;
    const processes = await startSwitchboardProcesses({ gatewayEnv: { LOG_LEVEL: "warn" } });
    try {
      const hostDirect = await drive(hostProbe(processes.hostUrl, processes.hostToken, prompt), resolved, null);
      const switchboard = await drive(
        sseProbe(
          new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl).href,
          { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` },
          JSON.stringify({ stream: true, messages: [{ role: "user", content: prompt }] }),
          agent,
        ),
        resolved,
        processes.gatewayPid,
      );
      return { ...resolved, upstreamDirect, portkey, hostDirect, switchboard };
    } finally {
      await processes.stop();
    }
  } finally {
    agent.destroy();
    await upstream.close();
  }
}

function gatewayRows(bench: string, gateway: string, figures: PathFigures, baseline: string, baselineFigures: PathFigures): BenchRow[] {
  const failed = figures.failures ? ` (${figures.failures} failed: ${figures.firstFailure})` : "";
  return [
    addedRow({ bench, figure: `${gateway}: time to first chunk p50${failed}`, value: figures.firstChunkMs.p50, unit: "ms", baseline, baselineValue: baselineFigures.firstChunkMs.p50, target: "reported (peer comparison)", maxAdded: null }),
    addedRow({ bench, figure: `${gateway}: time to first chunk p99`, value: figures.firstChunkMs.p99, unit: "ms", baseline, baselineValue: baselineFigures.firstChunkMs.p99, target: "reported (peer comparison)", maxAdded: null }),
    { bench, figure: `${gateway}: content chunks/s`, value: figures.chunksPerSecond, unit: "chunks/s", baseline, baselineValue: baselineFigures.chunksPerSecond, ratio: roundTo(figures.chunksPerSecond / baselineFigures.chunksPerSecond), target: "reported (peer comparison)", met: null },
    { bench, figure: `${gateway}: gateway process CPU per chunk`, value: figures.gatewayCpuMsPerChunk ?? NaN, unit: "ms", baseline: "— (no gateway on the baseline path)", baselineValue: null, target: "reported (peer comparison)", met: null },
  ];
}

/** The bench's rows for `npm run bench`: each gateway's added cost over its own same-run baseline. */
export async function run(): Promise<BenchReport> {
  const result = await measurePeerComparison();
  const bench = "portkey";
  const shape = `${result.concurrency} concurrent, ${result.chunksPerStream} × ${result.chunkSize} B chunks`;
  const rows = gatewayRows(bench, `Switchboard (${shape})`, result.switchboard, "intern host read directly over gRPC", result.hostDirect);
  if ("error" in result.portkey) {
    rows.push({ bench, figure: `Portkey could not run: ${result.portkey.error.replace(/\|/g, "/").replace(/\n/g, " ")}`, value: NaN, unit: "", baseline: "OpenAI-style upstream read directly", baselineValue: result.upstreamDirect.chunksPerSecond, target: "reported", met: null });
  } else {
    rows.push(...gatewayRows(bench, `Portkey ${portkeyVersion()}, fetch response re-wrapped for its issue #1389 (${shape})`, result.portkey, "OpenAI-style upstream read directly", result.upstreamDirect));
  }
  return { rows, detail: result };
}

function portkeyVersion(): string {
  return (require("@portkey-ai/gateway/package.json") as { version: string }).version;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
