import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { siblingModuleUrl, startModuleWorker } from "../module-worker.js";
import { abortable } from "./abortable.js";
import type { EspeakWorkerEvent, EspeakWorkerRequest } from "./espeak-messages.js";
import type { SpeechFormat } from "./speech-engine.js";
import { SpeechProviderError } from "./speech-provider-error.js";

/** The worker each slot runs: eSpeak NG, the resampler and the MP3 encoder, off the event loop. */
const workerEntry = siblingModuleUrl("espeak-worker", import.meta.url);

/** Options for {@link createEspeakPool}. */
export interface EspeakPoolOptions {
  /** Worker threads, each with its own eSpeak NG instance (~85–90 MB resident). Default: min(2, cores). */
  readonly size?: number;
  /** Segments a job may have queued or in flight on its worker; more hides latency, less saves memory. */
  readonly readAhead?: number;
  /** Unread audio per job above which no further segment is requested (slow consumers). */
  readonly highWaterBytes?: number;
}

/** One synthesis as the pool runs it: voice already resolved, text split lazily. */
export interface EspeakJob {
  /** Non-empty text pieces, pulled only as the job advances. */
  readonly segments: Iterator<string, void, undefined>;
  readonly voice: string;
  readonly rate: number;
  readonly format: SpeechFormat;
}

/** What the loaded eSpeak NG data offers, reported by the first warm worker. */
export interface EspeakInventory {
  /** Accepted language names, lower-case, each with the eSpeak voice file it loads. */
  readonly languages: readonly (readonly [name: string, voice: string])[];
  readonly variants: readonly string[];
}

/**
 * Warm eSpeak NG worker threads shared by all syntheses. A job stays on one
 * worker (its resampler and encoder hold state) but a worker interleaves many
 * jobs segment by segment, so a slow reader never starves the others.
 */
export interface EspeakPool {
  /** Resolves once a worker is warm; rejects with `unavailable` if none can start. */
  ready(): Promise<EspeakInventory>;
  /** Streams a job's audio, requesting segments only as fast as the caller reads. */
  run(job: EspeakJob, signal?: AbortSignal): AsyncGenerator<Uint8Array, void, undefined>;
  /** Fails running jobs as `unavailable` and terminates the workers. */
  close(): Promise<void>;
}

interface Slot {
  readonly worker: Worker;
  readonly jobs: Map<number, JobChannel>;
  warm: boolean;
}

/** The pool's side of one job: audio waiting to be read and the consumer waiting for it. */
interface JobChannel {
  readonly chunks: Uint8Array[];
  bufferedBytes: number;
  outstanding: number;
  finished: boolean;
  failure: SpeechProviderError | undefined;
  wake: (() => void) | undefined;
  /** Called when a segment completes, to request the next one. */
  readonly onSegmentDone: () => void;
}

/** Creates the pool and starts its workers warming up at once, so the first request finds them ready. */
export function createEspeakPool(options: EspeakPoolOptions = {}): EspeakPool {
  const size = options.size ?? Math.min(2, availableParallelism());
  const readAhead = options.readAhead ?? 2;
  const highWaterBytes = options.highWaterBytes ?? 512 * 1024;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`eSpeak pool size must be a positive integer, got ${size}`);

  const slots = new Set<Slot>();
  let closed = false;
  let nextJobId = 1;
  let startFailures = 0;
  let resolveInventory!: (inventory: EspeakInventory) => void;
  let rejectInventory!: (error: SpeechProviderError) => void;
  const inventory = new Promise<EspeakInventory>((resolve, reject) => {
    resolveInventory = resolve;
    rejectInventory = reject;
  });
  // A failed start is reported to callers of ready(); it must not crash the process meanwhile.
  inventory.catch(() => undefined);

  function spawn(): void {
    const slot: Slot = { worker: startModuleWorker(workerEntry), jobs: new Map(), warm: false };
    slots.add(slot);
    slot.worker.on("message", (event: EspeakWorkerEvent) => onEvent(slot, event));
    slot.worker.on("error", (error) => retire(slot, error.message));
    slot.worker.on("exit", (code) => retire(slot, `worker exited with code ${code}`));
  }

  function onEvent(slot: Slot, event: EspeakWorkerEvent): void {
    if (event.type === "ready") {
      slot.warm = true;
      updateRef(slot);
      resolveInventory({ languages: event.languages, variants: event.variants });
      return;
    }
    if (event.type === "init-failed") {
      retire(slot, event.message);
      return;
    }
    const channel = slot.jobs.get(event.job);
    if (channel === undefined) return; // the job was cancelled; its late output is dropped
    if (event.type === "audio") {
      channel.chunks.push(event.bytes);
      channel.bufferedBytes += event.bytes.length;
    } else if (event.type === "segment-done") {
      channel.outstanding--;
      channel.finished = event.last;
      channel.onSegmentDone();
    } else {
      channel.failure = new SpeechProviderError("provider_error", `The embedded speech engine failed: ${event.message}`);
    }
    channel.wake?.();
  }

  /** Takes a failed or exited worker out of service, failing its jobs; a worker that had been warm is replaced. */
  function retire(slot: Slot, reason: string): void {
    if (!slots.delete(slot)) return;
    void slot.worker.terminate();
    for (const channel of slot.jobs.values()) {
      channel.failure ??= closed
        ? new SpeechProviderError("unavailable", "The speech engine is shutting down.")
        : new SpeechProviderError("provider_error", `The embedded speech engine failed: ${reason}`);
      channel.wake?.();
    }
    slot.jobs.clear();
    if (closed) return;
    if (slot.warm) {
      spawn();
    } else if (++startFailures === size) {
      rejectInventory(new SpeechProviderError("unavailable", `The embedded speech engine could not start: ${reason}`));
    }
  }

  /** Idle warm workers must not keep the process alive; busy or starting ones must. */
  function updateRef(slot: Slot): void {
    if (slot.warm && slot.jobs.size === 0) slot.worker.unref();
    else slot.worker.ref();
  }

  function leastBusy(): Slot {
    let best: Slot | undefined;
    for (const slot of slots) {
      if (slot.warm && (best === undefined || slot.jobs.size < best.jobs.size)) best = slot;
    }
    if (best === undefined) throw new SpeechProviderError("unavailable", "No embedded speech worker is available.");
    return best;
  }

  async function* run(job: EspeakJob, signal?: AbortSignal): AsyncGenerator<Uint8Array, void, undefined> {
    signal?.throwIfAborted();
    if (closed) throw new SpeechProviderError("unavailable", "The speech engine is shutting down.");
    await abortable(inventory, signal);
    const slot = leastBusy();
    const id = nextJobId++;
    // One segment of look-ahead tells the worker which segment is the last.
    let upcoming = job.segments.next();
    if (upcoming.done) return;
    const requestMore = (): void => {
      while (
        !upcoming.done &&
        channel.failure === undefined &&
        channel.outstanding < readAhead &&
        channel.bufferedBytes < highWaterBytes
      ) {
        const text = upcoming.value;
        upcoming = job.segments.next();
        const request: EspeakWorkerRequest = {
          type: "segment",
          job: id,
          text,
          voice: job.voice,
          rate: job.rate,
          format: job.format,
          last: upcoming.done === true,
        };
        slot.worker.postMessage(request);
        channel.outstanding++;
      }
    };
    const channel: JobChannel = {
      chunks: [],
      bufferedBytes: 0,
      outstanding: 0,
      finished: false,
      failure: undefined,
      wake: undefined,
      onSegmentDone: requestMore,
    };
    slot.jobs.set(id, channel);
    updateRef(slot);
    try {
      requestMore();
      for (;;) {
        const chunk = channel.chunks.shift();
        if (chunk !== undefined) {
          channel.bufferedBytes -= chunk.length;
          requestMore();
          yield chunk;
        } else if (channel.failure !== undefined) {
          throw channel.failure;
        } else if (channel.finished) {
          return;
        } else {
          await abortable(
            new Promise<void>((resolve) => (channel.wake = resolve)),
            signal,
          );
          channel.wake = undefined;
        }
      }
    } finally {
      channel.wake = undefined;
      // Only a job still live on a live worker needs telling; a retired slot already forgot it.
      if (slot.jobs.delete(id) && !channel.finished) {
        const cancel: EspeakWorkerRequest = { type: "cancel", job: id };
        slot.worker.postMessage(cancel);
      }
      if (slots.has(slot)) updateRef(slot);
    }
  }

  for (let i = 0; i < size; i++) spawn();

  return {
    ready: () => inventory,
    run,
    async close() {
      if (closed) return;
      closed = true;
      rejectInventory(new SpeechProviderError("unavailable", "The speech engine is shutting down."));
      const workers = [...slots].map((slot) => slot.worker);
      for (const slot of [...slots]) retire(slot, "closed");
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}

