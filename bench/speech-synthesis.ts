import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { pino } from "pino";
import { createEspeakEngine, type EspeakEngine } from "../src/providers/speech/espeak-engine.js";
import type { SpeechFormat } from "../src/providers/speech/speech-engine.js";
import { loadServerConfig } from "../src/server/config.js";
import { addedRow, type BenchReport, type BenchRow } from "./bench-row.js";
import { startServer } from "../src/server/server.js";

/** Milliseconds to the first audio chunk over repeated warm requests. */
export interface FirstByteFigures {
  medianMs: number;
  p95Ms: number;
}

/** Results of {@link run}, with the targets of issue 5 beside them. */
export interface SpeechSynthesisBenchResult {
  workers: number;
  /** Warm time to first byte at the engine (what the route adds on top is the bridge's own cost). Target ≤ 60 ms. */
  firstByte: { pcm: FirstByteFigures; mp3: FirstByteFigures };
  /**
   * The same, end to end: POST /api/v1/audio/speech on a running server (auth, validation, rate limit,
   * in-process Connect call, raw HTTP body), first body byte at the client. Target ≤ 60 ms.
   */
  firstByteHttp: { pcm: FirstByteFigures; mp3: FirstByteFigures; bridgeOverheadMedianMs: number };
  /** Audio seconds per wall second, one synthesis at a time, so one worker. Target ≥ 100. */
  realTimeFactor: { pcm: number; mp3: number };
  /** Event-loop delay while 8 syntheses run at once. Target p99 ≤ 20 ms. */
  eventLoopDelay: { p99Ms: number; maxMs: number; parallelRealTimeFactor: number };
  meetsTargets: { firstByte: boolean; firstByteHttp: boolean; realTimeFactor: boolean; eventLoopDelay: boolean };
}

const greeting = "Thanks for calling Switchboard. How can I help you today?";
const passage =
  "The quick brown fox jumps over the lazy dog. Speech synthesis turns written text into sound, one sentence at a time. " +
  "This engine runs inside the server, in worker threads, so it needs no network and never blocks the event loop. " +
  "Every sentence is resampled from 22050 to 24000 hertz and, when asked, encoded as MP3 before it is sent. ";
/** 24 kHz × 16-bit mono. */
const pcmBytesPerSecond = 48000;

async function firstByte(engine: EspeakEngine, format: SpeechFormat, rounds: number): Promise<FirstByteFigures> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    let first = 0;
    for await (const _ of engine.synthesize({ input: greeting, voice: "alloy", format })) first ||= performance.now() - started;
    samples.push(first);
  }
  return figures(samples);
}

/** Synthesizes `input` and returns [bytes, wall milliseconds]. */
async function timed(engine: EspeakEngine, input: string, format: SpeechFormat, voice = "en-us"): Promise<[number, number]> {
  const started = performance.now();
  let bytes = 0;
  for await (const chunk of engine.synthesize({ input, voice, format })) bytes += chunk.length;
  return [bytes, performance.now() - started];
}

async function realTimeFactor(engine: EspeakEngine, input: string, audioSeconds: number, format: SpeechFormat): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < 5; i++) {
    const [, ms] = await timed(engine, input, format);
    rates.push(audioSeconds / (ms / 1000));
  }
  return round(rates.sort((a, b) => a - b)[2]);
}

async function loopDelayUnderLoad(engine: EspeakEngine, input: string, audioSeconds: number) {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  await Promise.all(Array.from({ length: 8 }, (_, i) => timed(engine, input, i % 2 ? "mp3" : "pcm")));
  const wallSeconds = (performance.now() - started) / 1000;
  histogram.disable();
  return {
    p99Ms: round(histogram.percentile(99) / 1e6),
    maxMs: round(histogram.max / 1e6),
    parallelRealTimeFactor: round((8 * audioSeconds) / wallSeconds),
  };
}

function figures(samples: number[]): FirstByteFigures {
  samples.sort((a, b) => a - b);
  return { medianMs: round(samples[Math.floor(samples.length / 2)]), p95Ms: round(samples[Math.floor(samples.length * 0.95)]) };
}

/** Time to the first body byte of POST /audio/speech, as an HTTP client sees it (keep-alive, warm). */
async function firstByteOverHttp(url: string, key: string, format: SpeechFormat, rounds: number): Promise<FirstByteFigures> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "local/espeak-ng", voice: "alloy", input: greeting, response_format: format }),
    });
    if (response.status !== 200) throw new Error(`POST /audio/speech answered ${response.status}: ${await response.text()}`);
    const reader = response.body!.getReader();
    let first = 0;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) first ||= performance.now() - started;
    samples.push(first);
  }
  return figures(samples);
}

/** Starts a server on a scratch embedded store and measures warm first-byte times through the bridge. */
async function httpFirstByte(rounds: number): Promise<{ pcm: FirstByteFigures; mp3: FirstByteFigures }> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-bench-speech-"));
  const server = await startServer(
    { ...loadServerConfig({ PORT: "0", GRPC_PORT: "0", DATA_DIR: dataDir, EMBEDDED_INTERN_HOST: "0" }), speechRequestsPerMinute: 1_000_000 },
    pino({ level: "silent" }),
  );
  try {
    const url = `${server.httpUrl}/api/v1/audio/speech`;
    const key = server.bootstrap!.api_key;
    await firstByteOverHttp(url, key, "pcm", 5); // warms the workers, the key cache and the connection
    await firstByteOverHttp(url, key, "mp3", 5);
    return { pcm: await firstByteOverHttp(url, key, "pcm", rounds), mp3: await firstByteOverHttp(url, key, "mp3", rounds) };
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/**
 * Measures the embedded eSpeak NG engine against issue 5's targets: warm
 * time to first byte (at the engine, then through the HTTP bridge of a
 * running server, so the bridge's cost shows beside the engine's), real-time
 * factor on one worker, and event-loop delay while 8 syntheses share the
 * pool. Prints a summary to stderr and returns the figures.
 */
export async function measureSpeechSynthesis(): Promise<SpeechSynthesisBenchResult> {
  const workers = Math.min(2, availableParallelism());
  const engine = createEspeakEngine({ size: workers });
  let closed = false;
  try {
    await engine.ready();
    const longText = passage.repeat(4);
    const [pcmBytes] = await timed(engine, longText, "pcm"); // also warms both workers' caches
    await timed(engine, longText, "mp3");
    const audioSeconds = pcmBytes / pcmBytesPerSecond;

    const result: Omit<SpeechSynthesisBenchResult, "meetsTargets" | "firstByteHttp"> = {
      workers,
      firstByte: { pcm: await firstByte(engine, "pcm", 30), mp3: await firstByte(engine, "mp3", 30) },
      realTimeFactor: {
        pcm: await realTimeFactor(engine, longText, audioSeconds, "pcm"),
        mp3: await realTimeFactor(engine, longText, audioSeconds, "mp3"),
      },
      eventLoopDelay: await loopDelayUnderLoad(engine, longText, audioSeconds),
    };
    // The server runs its own pool: this one must not compete with it for the cores.
    await engine.close();
    closed = true;
    const overHttp = await httpFirstByte(30);
    const firstByteHttp = { ...overHttp, bridgeOverheadMedianMs: round(overHttp.pcm.medianMs - result.firstByte.pcm.medianMs) };
    const summary: SpeechSynthesisBenchResult = {
      ...result,
      firstByteHttp,
      meetsTargets: {
        firstByte: Math.max(result.firstByte.pcm.medianMs, result.firstByte.mp3.medianMs) <= 60,
        firstByteHttp: Math.max(firstByteHttp.pcm.medianMs, firstByteHttp.mp3.medianMs) <= 60,
        realTimeFactor: result.realTimeFactor.pcm >= 100,
        eventLoopDelay: result.eventLoopDelay.p99Ms <= 20,
      },
    };
    process.stderr.write(
      [
        `speech-synthesis (${workers} workers, ${audioSeconds.toFixed(1)} s of audio per long synthesis)`,
        `  first byte, warm: pcm median ${summary.firstByte.pcm.medianMs} ms (p95 ${summary.firstByte.pcm.p95Ms}), ` +
          `mp3 median ${summary.firstByte.mp3.medianMs} ms (p95 ${summary.firstByte.mp3.p95Ms})   target ≤ 60 ms`,
        `  first byte over HTTP, warm: pcm median ${firstByteHttp.pcm.medianMs} ms (p95 ${firstByteHttp.pcm.p95Ms}), ` +
          `mp3 median ${firstByteHttp.mp3.medianMs} ms (p95 ${firstByteHttp.mp3.p95Ms}); bridge adds ${firstByteHttp.bridgeOverheadMedianMs} ms   target ≤ 60 ms`,
        `  real-time factor, one worker: pcm ${summary.realTimeFactor.pcm}x, mp3 ${summary.realTimeFactor.mp3}x   target ≥ 100x`,
        `  event-loop delay, 8 parallel: p99 ${summary.eventLoopDelay.p99Ms} ms, max ${summary.eventLoopDelay.maxMs} ms ` +
          `(pool ${summary.eventLoopDelay.parallelRealTimeFactor}x real time)   target p99 ≤ 20 ms`,
      ].join("\n") + "\n",
    );
    return summary;
  } finally {
    if (!closed) await engine.close();
  }
}

/** The bench's rows for `npm run bench`: first byte over HTTP against the engine's own, and the absolute targets. */
export async function run(): Promise<BenchReport> {
  const result = await measureSpeechSynthesis();
  const bench = "speech-synthesis";
  const absolute = "— (absolute target)";
  const firstByteRows = (["pcm", "mp3"] as const).map((format) =>
    addedRow({ bench, figure: `first byte over HTTP, ${format}, warm median`, value: result.firstByteHttp[format].medianMs, unit: "ms", baseline: "the engine's own first byte, same run", baselineValue: result.firstByte[format].medianMs, target: "≤ 60 ms", maxAdded: null }),
  );
  for (const row of firstByteRows) row.met = row.value <= 60;
  const speedRows: BenchRow[] = (["pcm", "mp3"] as const).map((format) => ({
    bench, figure: `real-time factor, ${format}, one worker`, value: result.realTimeFactor[format], unit: "× real time", baseline: absolute, baselineValue: null, target: "≥ 100×", met: result.realTimeFactor[format] >= 100,
  }));
  return {
    rows: [
      ...firstByteRows,
      ...speedRows,
      { bench, figure: "event-loop delay p99, 8 syntheses at once", value: result.eventLoopDelay.p99Ms, unit: "ms", baseline: absolute, baselineValue: null, target: "≤ 20 ms", met: result.eventLoopDelay.p99Ms <= 20 },
    ],
    detail: result,
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
