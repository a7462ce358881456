import { availableParallelism } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { createEspeakEngine, type EspeakEngine } from "../src/providers/speech/espeak-engine.js";
import type { SpeechFormat } from "../src/providers/speech/speech-engine.js";

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
  /** Audio seconds per wall second, one synthesis at a time, so one worker. Target ≥ 100. */
  realTimeFactor: { pcm: number; mp3: number };
  /** Event-loop delay while 8 syntheses run at once. Target p99 ≤ 20 ms. */
  eventLoopDelay: { p99Ms: number; maxMs: number; parallelRealTimeFactor: number };
  meetsTargets: { firstByte: boolean; realTimeFactor: boolean; eventLoopDelay: boolean };
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
  samples.sort((a, b) => a - b);
  return { medianMs: round(samples[Math.floor(rounds / 2)]), p95Ms: round(samples[Math.floor(rounds * 0.95)]) };
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

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/**
 * Measures the embedded eSpeak NG engine against issue 5's targets: warm
 * time to first byte, real-time factor on one worker, and event-loop delay
 * while 8 syntheses share the pool. Prints a summary to stderr and returns the figures.
 */
export async function run(): Promise<SpeechSynthesisBenchResult> {
  const workers = Math.min(2, availableParallelism());
  const engine = createEspeakEngine({ size: workers });
  try {
    await engine.ready();
    const longText = passage.repeat(4);
    const [pcmBytes] = await timed(engine, longText, "pcm"); // also warms both workers' caches
    await timed(engine, longText, "mp3");
    const audioSeconds = pcmBytes / pcmBytesPerSecond;

    const result: Omit<SpeechSynthesisBenchResult, "meetsTargets"> = {
      workers,
      firstByte: { pcm: await firstByte(engine, "pcm", 30), mp3: await firstByte(engine, "mp3", 30) },
      realTimeFactor: {
        pcm: await realTimeFactor(engine, longText, audioSeconds, "pcm"),
        mp3: await realTimeFactor(engine, longText, audioSeconds, "mp3"),
      },
      eventLoopDelay: await loopDelayUnderLoad(engine, longText, audioSeconds),
    };
    const summary: SpeechSynthesisBenchResult = {
      ...result,
      meetsTargets: {
        firstByte: Math.max(result.firstByte.pcm.medianMs, result.firstByte.mp3.medianMs) <= 60,
        realTimeFactor: result.realTimeFactor.pcm >= 100,
        eventLoopDelay: result.eventLoopDelay.p99Ms <= 20,
      },
    };
    process.stderr.write(
      [
        `speech-synthesis (${workers} workers, ${audioSeconds.toFixed(1)} s of audio per long synthesis)`,
        `  first byte, warm: pcm median ${summary.firstByte.pcm.medianMs} ms (p95 ${summary.firstByte.pcm.p95Ms}), ` +
          `mp3 median ${summary.firstByte.mp3.medianMs} ms (p95 ${summary.firstByte.mp3.p95Ms})   target ≤ 60 ms`,
        `  real-time factor, one worker: pcm ${summary.realTimeFactor.pcm}x, mp3 ${summary.realTimeFactor.mp3}x   target ≥ 100x`,
        `  event-loop delay, 8 parallel: p99 ${summary.eventLoopDelay.p99Ms} ms, max ${summary.eventLoopDelay.maxMs} ms ` +
          `(pool ${summary.eventLoopDelay.parallelRealTimeFactor}x real time)   target p99 ≤ 20 ms`,
      ].join("\n") + "\n",
    );
    return summary;
  } finally {
    await engine.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
