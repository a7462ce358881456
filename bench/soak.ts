import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { roundTo, type BenchReport, type BenchRow } from "./bench-row.js";
import { createBenchAgent, recordSse } from "./chat-path/sse-client.js";
import { startSwitchboardProcesses } from "./chat-path/switchboard-processes.js";

/** Options for {@link measureSoak}; the defaults are what `npm run bench` measures. */
export interface SoakOptions {
  /** Length of the steady load (SOAK_SECONDS), warm-up included. */
  seconds?: number;
  /** Streaming turns in flight at once, each started again as soon as it ends. */
  concurrency?: number;
  chunksPerTurn?: number;
  chunkSize?: number;
  sampleEveryMs?: number;
  /** Load before the first sample, so the baseline third is a warm process under load, not an idle one. */
  warmupSeconds?: number;
}

/** One reading of the gateway's own /metrics. */
export interface SoakSample {
  atSeconds: number;
  rssBytes: number;
  heapUsedBytes: number;
  activeHandles: number;
}

/** A series summarised: the first third is the baseline the last third is judged against. */
export interface SeriesTrend {
  firstThird: number;
  lastThird: number;
  /** Least-squares slope over all samples, per minute. */
  slopePerMinute: number;
}

/** Figures of {@link measureSoak}. */
export interface Soak {
  seconds: number;
  concurrency: number;
  turns: number;
  failedTurns: number;
  samples: SoakSample[];
  rss: SeriesTrend;
  /** Sampled without a collection: it moves with the collector's timing, so it is reported, not judged. */
  heapUsed: SeriesTrend;
  /**
   * V8 heap used right after a forced full collection, under the same load:
   * once a third of the run has passed, and near its end. What is still
   * there after a full collection is live, so this is the figure a leak
   * shows in.
   */
  collectedHeap: { afterFirstThird: number; atEnd: number };
  activeHandles: SeriesTrend;
}

const series = { rssBytes: "process_resident_memory_bytes", heapUsedBytes: "nodejs_heap_size_used_bytes", activeHandles: "nodejs_active_handles_total" } as const;

function gauge(text: string, name: string): number {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, "m").exec(text)?.[1] ?? NaN);
}

function trend(samples: SoakSample[], key: keyof typeof series): SeriesTrend {
  const third = Math.max(1, Math.floor(samples.length / 3));
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const xs = samples.map((sample) => sample.atSeconds / 60);
  const ys = samples.map((sample) => sample[key]);
  const [mx, my] = [mean(xs), mean(ys)];
  const covariance = xs.reduce((sum, x, i) => sum + (x - mx) * (ys[i] - my), 0);
  const variance = xs.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  return { firstThird: mean(ys.slice(0, third)), lastThird: mean(ys.slice(-third)), slopePerMinute: variance > 0 ? covariance / variance : 0 };
}

/**
 * Steady chat load on one gateway (`concurrency` streaming turns in a loop,
 * each a few hundred chunks) for `seconds`, sampling the gateway's RSS, heap
 * and active handles from its /metrics: memory or handles that grow under a
 * load that does not are a leak.
 */
export async function measureSoak(options: SoakOptions = {}): Promise<Soak> {
  const seconds = options.seconds ?? Number(process.env.SOAK_SECONDS ?? 600);
  const concurrency = options.concurrency ?? 16;
  const prompt = `flood ${options.chunksPerTurn ?? 300} ${options.chunkSize ?? 16}`;
  const sampleEveryMs = options.sampleEveryMs ?? 5_000;
  const warmupMs = (options.warmupSeconds ?? Math.min(30, seconds / 5)) * 1000;
  const processes = await startSwitchboardProcesses({ gatewayEnv: { LOG_LEVEL: "warn" } });
  const agent = createBenchAgent();
  const request = {
    url: new URL(`/api/v1/interns/${processes.internId}/chat/completions`, processes.httpUrl),
    headers: { "content-type": "application/json", authorization: `Bearer ${processes.apiKey}` },
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: prompt }] }),
  };
  const samples: SoakSample[] = [];
  let turns = 0;
  let failedTurns = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  try {
    const worker = async () => {
      while (performance.now() < end) {
        await recordSse(agent, request).then(
          () => turns++,
          async () => {
            failedTurns++;
            await sleep(100);
          },
        );
      }
    };
    const sampler = async () => {
      await sleep(warmupMs);
      while (performance.now() < end) {
        const text = await (await fetch(new URL("/metrics", processes.httpUrl))).text();
        samples.push({
          atSeconds: roundTo((performance.now() - started) / 1000, 1),
          rssBytes: gauge(text, series.rssBytes),
          heapUsedBytes: gauge(text, series.heapUsedBytes),
          activeHandles: gauge(text, series.activeHandles),
        });
        await sleep(Math.min(sampleEveryMs, Math.max(0, end - performance.now())));
      }
    };
    const collectedHeapUsed = async () => {
      const probe = await processes.probeHeap("gateway");
      if (!probe.collected) throw new Error("The gateway did not run a full collection when asked.");
      return probe.after.heapUsed;
    };
    const collector = async () => {
      await sleep((seconds * 1000) / 3);
      const afterFirstThird = await collectedHeapUsed();
      // Near the end, while the load still runs, as it did at the first probe.
      await sleep(Math.max(0, end - performance.now() - sampleEveryMs));
      return { afterFirstThird, atEnd: await collectedHeapUsed() };
    };
    const [collectedHeap] = await Promise.all([collector(), sampler(), ...Array.from({ length: concurrency }, worker)]);
    if (samples.length < 3) throw new Error(`${samples.length} samples: SOAK_SECONDS is too short to compare thirds.`);
    return {
      seconds,
      concurrency,
      turns,
      failedTurns,
      samples,
      rss: trend(samples, "rssBytes"),
      heapUsed: trend(samples, "heapUsedBytes"),
      collectedHeap,
      activeHandles: trend(samples, "activeHandles"),
    };
  } finally {
    agent.destroy();
    await processes.stop();
  }
}

function collectedHeapRow(bench: string, heap: Soak["collectedHeap"]): BenchRow {
  const mib = (bytes: number) => roundTo(bytes / 1024 / 1024, 1);
  const ratio = roundTo(heap.atEnd / heap.afterFirstThird);
  return {
    bench,
    figure: "gateway V8 heap after a forced full collection, near the end of the run",
    value: mib(heap.atEnd),
    unit: "MiB",
    baseline: "the same, a third into the run",
    baselineValue: mib(heap.afterFirstThird),
    ratio,
    target: "≤ 1.1× (within 10%)",
    met: ratio <= 1.1,
  };
}

/** The bench's rows for `npm run bench`: the last third of the run against its first third. */
export async function run(): Promise<BenchReport> {
  const result = await measureSoak();
  const bench = "soak";
  const baseline = "first third of the same run";
  const mib = (bytes: number) => roundTo(bytes / 1024 / 1024, 1);
  const memoryRow = (figure: string, trendOf: SeriesTrend): BenchRow => {
    const ratio = roundTo(trendOf.lastThird / trendOf.firstThird);
    return { bench, figure: `${figure}, last third (slope ${mib(trendOf.slopePerMinute)} MiB/min)`, value: mib(trendOf.lastThird), unit: "MiB", baseline, baselineValue: mib(trendOf.firstThird), ratio, target: "≤ 1.1× (within 10%)", met: ratio <= 1.1 };
  };
  const handles = result.activeHandles;
  return {
    rows: [
      { bench, figure: `turns completed, ${result.concurrency} concurrent for ${result.seconds} s (${result.failedTurns} failed)`, value: result.turns, unit: "turns", baseline: "— (reported)", baselineValue: null, target: "no failed turn", met: result.failedTurns === 0 },
      memoryRow("gateway RSS", result.rss),
      collectedHeapRow(bench, result.collectedHeap),
      { ...memoryRow("gateway V8 heap used, sampled without a collection", result.heapUsed), target: "reported (moves with the collector's timing; the row above is judged)", met: null },
      {
        bench,
        figure: `gateway active handles, last third (slope ${roundTo(handles.slopePerMinute, 2)}/min)`,
        value: roundTo(handles.lastThird, 1),
        unit: "handles",
        baseline,
        baselineValue: roundTo(handles.firstThird, 1),
        added: roundTo(handles.lastThird - handles.firstThird, 1),
        target: `not growing: last third ≤ first third + ${result.concurrency} (one per turn in flight)`,
        met: handles.lastThird <= handles.firstThird + result.concurrency,
      },
    ],
    detail: result,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
