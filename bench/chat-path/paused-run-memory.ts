import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { readSse, createBenchAgent } from "./sse-client.js";
import { startSwitchboardProcesses, type HeapProbe, type SwitchboardProcesses } from "./switchboard-processes.js";

/** Options for {@link measurePausedRunMemory}. */
export interface PausedRunMemoryOptions {
  /** Runs left paused at a permission question. */
  pausedRuns: number;
  /** Chat requests in flight at once while they are created. */
  concurrency: number;
}

/** Memory of one probed process, bytes. */
export interface ProcessMemory {
  /** VmRSS before the forced collection, and after it. */
  rssBeforeGc: number;
  rssAfterGc: number;
  /** V8 heap in use after a full collection. */
  heapUsed: number;
  /** Off-heap memory V8 accounts for (Buffers, WebAssembly memory), after the collection. */
  external: number;
}

/** One snapshot of the three processes. */
export interface MemorySnapshot {
  gateway: ProcessMemory;
  host: ProcessMemory;
  agent: { rss: number };
}

/** Figures of {@link measurePausedRunMemory}. */
export interface PausedRunMemory {
  /** Runs asked for. */
  requested: number;
  /** Chat turns sent while creating them (creation stops at the first turn that does not pause). */
  turns: number;
  /** Paused runs the host reported holding when the "after" snapshot was taken: the divisor. */
  paused: number;
  /** Why turns did not pause, with counts (empty when every turn paused). */
  failures: Record<string, number>;
  /** Paused runs created per second over HTTP. */
  createdPerSecond: number;
  before: MemorySnapshot;
  after: MemorySnapshot;
  /** (after − before) ÷ paused runs, bytes. */
  perRun: {
    /** V8 heap (heapUsed + external) after a full collection, gateway + host: the figure the target is judged by. */
    gatewayPlusHostHeap: number;
    gatewayHeap: number;
    hostHeap: number;
    /** VmRSS after the collection, gateway + host and each. */
    gatewayPlusHostRss: number;
    gatewayRss: number;
    hostRss: number;
    /** VmRSS before the collection (garbage included), gateway + host. */
    gatewayPlusHostRssBeforeGc: number;
    /** The scripted agent's RSS: not Switchboard's memory (see {@link measurePausedRunMemory}). */
    agentRss: number;
  };
}

interface ToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/** One chat turn over HTTP that must end paused at a question; returns the session and the question. */
async function pausedTurn(processes: SwitchboardProcesses, agent: ReturnType<typeof createBenchAgent>, body: object): Promise<{ sessionId: string; toolCall: ToolCall }> {
  let toolCall: ToolCall | undefined;
  let sessionId: string | undefined;
  let finish: string | undefined;
  await readSse(
    agent,
    {
      url: new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl),
      headers: { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` },
      body: JSON.stringify(body),
    },
    (data) => {
      if (data === "[DONE]") return;
      const chunk = JSON.parse(data) as { session_id?: string; choices: { delta: { tool_calls?: ToolCall[] }; finish_reason: string | null }[] };
      toolCall ??= chunk.choices[0]?.delta.tool_calls?.[0];
      finish = chunk.choices[0]?.finish_reason ?? finish;
      sessionId ??= chunk.session_id;
    },
  );
  if (finish !== "tool_calls" || !toolCall || !sessionId) throw new Error(`The turn did not pause at a question (finish ${finish}).`);
  return { sessionId, toolCall };
}

const permissionPrompt = (approval: string) => ({ stream: true, approval_mode: approval, messages: [{ role: "user", content: "permission X" }] });

/**
 * Runs up to `count` turns, `concurrency` at a time, and stops starting new
 * ones at the first failure: past a capacity limit, more turns only add
 * memory that is not paused-run state. Returns the turns started and why
 * any failed.
 */
async function pool(count: number, concurrency: number, turn: () => Promise<unknown>): Promise<{ turns: number; failures: Record<string, number> }> {
  let next = 0;
  const failures: Record<string, number> = {};
  let failed = false;
  const worker = async () => {
    while (next < count && !failed) {
      next++;
      await turn().catch((error: Error) => {
        failed = true;
        failures[error.message] = (failures[error.message] ?? 0) + 1;
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { turns: next, failures };
}

async function snapshot(processes: SwitchboardProcesses): Promise<MemorySnapshot> {
  // Read RSS, collect, read again: the probe's own before/after are taken in-process around gc().
  const read = async (which: "gateway" | "host"): Promise<ProcessMemory> => {
    const rssBeforeGc = processes.rss(which)?.rss ?? NaN;
    const probe: HeapProbe = await processes.probeHeap(which);
    if (!probe.collected) throw new Error(`The ${which} was started without --expose-gc.`);
    await sleep(200);
    return { rssBeforeGc, rssAfterGc: processes.rss(which)?.rss ?? NaN, heapUsed: probe.after.heapUsed, external: probe.after.external };
  };
  return { gateway: await read("gateway"), host: await read("host"), agent: { rss: processes.rss("agent")?.rss ?? NaN } };
}

/**
 * Memory per run paused at a question. Starts its own gateway and host (so
 * earlier load does not blur the baseline) with room for the runs, warms the
 * path (including a pause answered with `cancel`), closes the client's
 * connections, forces a full collection in both processes and snapshots
 * them; then creates `pausedRuns` runs that stop at a permission question in
 * manual mode through POST …/chat/completions, `concurrency` at a time,
 * closes the connections again, collects and snapshots again.
 *
 * The target is judged by the V8 heap (heapUsed + external after a full
 * collection) of the gateway and the host, the two Switchboard processes
 * that could hold a paused run: it counts exactly what stays reachable.
 * RSS is reported beside it, before and after the collection, but whether
 * V8 and malloc hand freed pages back to the kernel decides much of an RSS
 * delta (it can even come out negative). The agent's memory is reported
 * apart: it belongs to whichever coding agent an operator runs (the scripted
 * agent here is a stand-in), not to Switchboard.
 */
export async function measurePausedRunMemory(options: PausedRunMemoryOptions): Promise<PausedRunMemory> {
  const processes = await startSwitchboardProcesses({ maxPausedRuns: Math.max(6_000, options.pausedRuns + 1_000), interactionDeadlineSeconds: 3_600 });
  try {
    const host = createClient(InternHostService, createGrpcTransport({ baseUrl: processes.hostUrl }));
    const hostHeaders = { authorization: `Bearer ${processes.hostToken}` };

    const warm = createBenchAgent();
    const warmUp = await pool(100, options.concurrency, async () => {
      const asked = await pausedTurn(processes, warm, permissionPrompt("manual"));
      const answer = {
        stream: true,
        session_id: asked.sessionId,
        messages: [
          { role: "assistant", content: null, tool_calls: [asked.toolCall] },
          { role: "tool", tool_call_id: asked.toolCall.id, content: "cancel" },
        ],
      };
      await readSse(warm, { url: new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl), headers: { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` }, body: JSON.stringify(answer) }, () => undefined);
    });
    warm.destroy();
    if (Object.keys(warmUp.failures).length > 0) throw new Error(`The warm-up turns failed: ${Object.keys(warmUp.failures)[0]}`);
    await sleep(500);
    const before = await snapshot(processes);

    const client = createBenchAgent();
    const started = performance.now();
    const created = await pool(options.pausedRuns, options.concurrency, () => pausedTurn(processes, client, permissionPrompt("manual")));
    const seconds = (performance.now() - started) / 1000;
    client.destroy();
    await sleep(500);
    const status = await host.getHostStatus({}, { headers: hostHeaders });
    const after = await snapshot(processes);

    const paused = status.pausedRuns;
    const per = (bytes: number) => Math.round(bytes / paused);
    const heap = (memory: ProcessMemory) => memory.heapUsed + memory.external;
    const gatewayHeap = heap(after.gateway) - heap(before.gateway);
    const hostHeap = heap(after.host) - heap(before.host);
    const gatewayRss = after.gateway.rssAfterGc - before.gateway.rssAfterGc;
    const hostRss = after.host.rssAfterGc - before.host.rssAfterGc;
    return {
      requested: options.pausedRuns,
      turns: created.turns,
      paused,
      failures: created.failures,
      createdPerSecond: Math.round(paused / seconds),
      before,
      after,
      perRun: {
        gatewayPlusHostHeap: per(gatewayHeap + hostHeap),
        gatewayHeap: per(gatewayHeap),
        hostHeap: per(hostHeap),
        gatewayPlusHostRss: per(gatewayRss + hostRss),
        gatewayRss: per(gatewayRss),
        hostRss: per(hostRss),
        gatewayPlusHostRssBeforeGc: per(after.gateway.rssBeforeGc + after.host.rssBeforeGc - before.gateway.rssBeforeGc - before.host.rssBeforeGc),
        agentRss: per(after.agent.rss - before.agent.rss),
      },
    };
  } finally {
    await processes.stop();
  }
}
