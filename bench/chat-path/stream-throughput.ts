import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBareSseServer } from "./bare-sse-server.js";
import { guardDirectory, releaseDirectory } from "./orphan-guard.js";
import { readCpuMs } from "./process-stats.js";
import { recordSse, type RecordedSse, type SseRequest } from "./sse-client.js";
import type { SwitchboardProcesses } from "./switchboard-processes.js";

/** Options for {@link measureStreamThroughput}. */
export interface StreamThroughputOptions {
  /** Streams flooded at once. */
  streams: number;
  /** Content chunks the agent writes per stream, of `chunkSize` characters. */
  chunksPerStream: number;
  chunkSize: number;
  /** Measured rounds per path (after one warm-up round each). */
  rounds: number;
}

/** One path's figures, over all measured rounds. */
export interface PathThroughput {
  /** SSE events (`data:` lines: chunks, `[DONE]`) per second reaching the client. */
  eventsPerSecond: number;
  /** The agent's content chunks per second reaching the client, whatever events carried them. */
  agentChunksPerSecond: number;
  events: number;
  bytes: number;
  seconds: number;
  /** CPU milliseconds per event of each server process, and of this client. */
  cpuMsPerEvent: Record<string, number>;
  /** The client's CPU time over the wall time: near 1 would mean the client, not the server, set the pace. */
  clientCpuShare: number;
}

/** Figures of {@link measureStreamThroughput}. */
export interface StreamThroughput {
  whole: PathThroughput;
  bare: PathThroughput;
  /** Agent chunks per SSE event on the whole path: the intern host coalesces text waiting behind a busy reader. */
  agentChunksPerEvent: number;
}

const bareFloodsPerRound = 3;

interface Round {
  responses: RecordedSse[];
  seconds: number;
  cpuMs: Record<string, number>;
}

async function floodRound(agent: http.Agent, requests: SseRequest[], pids: Record<string, number>): Promise<Round> {
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, readCpuMs(pid) ?? NaN]));
  const clientBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const responses = await Promise.all(requests.map((request) => recordSse(agent, request)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const client = process.cpuUsage(clientBefore);
  const cpuMs = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, (readCpuMs(pid) ?? NaN) - cpuBefore[name]]));
  cpuMs.client = (client.user + client.system) / 1000;
  return { responses, seconds, cpuMs };
}

/** Checks a recorded chat response and returns the characters of content it carried. */
function contentCharacters(response: RecordedSse): number {
  const text = Buffer.concat(response.body).toString("utf8");
  let characters = 0;
  let finish: string | undefined;
  let done = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    if (line === "data: [DONE]") {
      done = true;
      continue;
    }
    const choice = (JSON.parse(line.slice(6)) as { choices: { delta: { content?: string }; finish_reason: string | null }[] }).choices[0];
    characters += choice?.delta.content?.length ?? 0;
    if (choice?.finish_reason) finish = choice.finish_reason;
  }
  if (finish !== "stop" || !done) throw new Error(`A flood did not end with stop and [DONE] (finish ${finish}).`);
  return characters;
}

function summarize(rounds: Round[], agentChunks: number): PathThroughput {
  const events = rounds.reduce((sum, round) => sum + round.responses.reduce((count, response) => count + response.events, 0), 0);
  const bytes = rounds.reduce((sum, round) => sum + round.responses.reduce((count, response) => count + response.bytes, 0), 0);
  const seconds = rounds.reduce((sum, round) => sum + round.seconds, 0);
  const cpuMsPerEvent: Record<string, number> = {};
  for (const name of Object.keys(rounds[0].cpuMs)) {
    const total = rounds.reduce((sum, round) => sum + round.cpuMs[name], 0);
    cpuMsPerEvent[name] = Math.round((total / events) * 1e4) / 1e4;
  }
  return {
    eventsPerSecond: Math.round(events / seconds),
    agentChunksPerSecond: Math.round((agentChunks * rounds.length) / seconds),
    events,
    bytes,
    seconds: Math.round(seconds * 1000) / 1000,
    cpuMsPerEvent,
    clientCpuShare: Math.round((rounds.reduce((sum, round) => sum + round.cpuMs.client, 0) / 1000 / seconds) * 100) / 100,
  };
}

/**
 * Chunks per second through the whole path beside a bare Node SSE writer
 * sending the same bytes. Each round floods `streams` chat responses at once
 * (`flood N SIZE`: the agent writes N content chunks as fast as it can) and
 * records what the client received; the bare writer, in its own process, then
 * replays exactly those responses (same events, same sizes, one write each)
 * to the same client, so the ratio isolates everything behind the socket.
 */
export async function measureStreamThroughput(processes: SwitchboardProcesses, agent: http.Agent, options: StreamThroughputOptions): Promise<StreamThroughput> {
  const url = new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl);
  const body = JSON.stringify({ stream: true, messages: [{ role: "user", content: `flood ${options.chunksPerStream} ${options.chunkSize}` }] });
  const headers = { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` };
  const requests = Array.from({ length: options.streams }, () => ({ url, headers, body }));
  const agentChunks = options.streams * options.chunksPerStream;
  const pids = { gateway: processes.gatewayPid, host: processes.hostPid, agent: processes.agentPid };

  await floodRound(agent, requests, pids);
  const wholeRounds: Round[] = [];
  const bareRounds: Round[] = [];
  const recordings = mkdtempSync(join(tmpdir(), "switchboard-sse-recordings-"));
  guardDirectory(recordings);
  try {
    for (let round = 0; round < options.rounds; round++) {
      const whole = await floodRound(agent, requests, pids);
      for (const response of whole.responses) {
        if (contentCharacters(response) !== options.chunksPerStream * options.chunkSize) throw new Error("A flood lost content.");
      }
      wholeRounds.push(whole);
      // The bare writer replays this very round, so both paths carry the same events.
      whole.responses.forEach((response, index) => writeFileSync(join(recordings, `${index}.sse`), Buffer.concat(response.body)));
      const bare = await startBareSseServer(recordings);
      try {
        const bareRequests: SseRequest[] = requests.map((_, index) => ({ url: new URL(`/${index}`, bare.url), method: "GET" }));
        await floodRound(agent, bareRequests, { bare: bare.pid });
        // The bare writer is over in a blink: several passes steady its figure.
        for (let pass = 0; pass < bareFloodsPerRound; pass++) bareRounds.push(await floodRound(agent, bareRequests, { bare: bare.pid }));
      } finally {
        await bare.stop();
      }
    }
  } finally {
    rmSync(recordings, { recursive: true, force: true });
    releaseDirectory(recordings);
  }
  const whole = summarize(wholeRounds, agentChunks);
  return {
    whole,
    bare: summarize(bareRounds, agentChunks),
    agentChunksPerEvent: Math.round(((agentChunks * options.rounds) / whole.events) * 100) / 100,
  };
}
