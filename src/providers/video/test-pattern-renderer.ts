import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import { siblingModuleUrl, startModuleWorker } from "../module-worker.js";
import type { TestPatternPlan } from "./test-pattern-plan.js";
import { VideoProviderError } from "./video-provider-error.js";

/** Options for {@link createTestPatternRenderer}. */
export interface TestPatternRendererOptions {
  /** Renders running at once; more wait their turn. Default: half the cores, 1 to 4. */
  maxConcurrent?: number;
}

/** Renders plans to MP4 bytes, each in its own worker thread. */
export interface TestPatternRenderer {
  /** Resolves with the MP4; `onProgress` receives frames encoded so far. Aborting terminates the worker. */
  render(plan: TestPatternPlan, signal?: AbortSignal, onProgress?: (frames: number) => void): Promise<Uint8Array>;
  /** Aborts every render, queued or running. */
  close(): Promise<void>;
}

interface WorkerMessage {
  type: "progress" | "done";
  frames?: number;
  bytes?: Uint8Array;
}

const workerUrl = siblingModuleUrl("test-pattern-worker", import.meta.url);

function abortError(): VideoProviderError {
  return new VideoProviderError("aborted", "The render was aborted.");
}

/** Runs one worker to its end, terminating it on every path. */
async function runWorker(plan: TestPatternPlan, signal: AbortSignal, onProgress?: (frames: number) => void): Promise<Uint8Array> {
  const worker: Worker = startModuleWorker(workerUrl, plan);
  try {
    return await new Promise<Uint8Array>((resolve, reject) => {
      const onAbort = () => reject(abortError());
      signal.addEventListener("abort", onAbort, { once: true });
      worker.on("message", (message: WorkerMessage) => {
        if (message.type === "progress" && message.frames !== undefined) onProgress?.(message.frames);
        if (message.type === "done" && message.bytes) resolve(message.bytes);
      });
      worker.on("error", (error) => reject(new VideoProviderError("generation_failed", "The test pattern renderer failed.", { cause: error })));
      worker.on("exit", (code) => reject(new VideoProviderError("generation_failed", `The test pattern renderer exited with code ${code}.`)));
      worker.once("exit", () => signal.removeEventListener("abort", onAbort));
    });
  } finally {
    await worker.terminate();
  }
}

/**
 * Creates the renderer behind `local/test-pattern`. Each render gets a fresh
 * worker (its start is small beside a render), which keeps the encoder's
 * global state and handlers out of the server, and a slot limit keeps renders
 * from taking every core.
 */
export function createTestPatternRenderer(options: TestPatternRendererOptions = {}): TestPatternRenderer {
  const maxConcurrent = options.maxConcurrent ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
  const closing = new AbortController();
  const waiting: Array<() => void> = [];
  let running = 0;

  async function acquire(signal: AbortSignal): Promise<void> {
    while (running >= maxConcurrent) {
      if (signal.aborted) throw abortError();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          waiting.splice(waiting.indexOf(wake), 1);
          reject(abortError());
        };
        const wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        waiting.push(wake);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
    running++;
  }

  function release(): void {
    running--;
    waiting.shift()?.();
  }

  return {
    async render(plan, signal, onProgress) {
      const combined = signal ? AbortSignal.any([signal, closing.signal]) : closing.signal;
      if (combined.aborted) throw abortError();
      await acquire(combined);
      try {
        return await runWorker(plan, combined, onProgress);
      } finally {
        release();
      }
    },
    async close() {
      closing.abort();
    },
  };
}
