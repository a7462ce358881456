import { randomBytes } from "node:crypto";
import { createTestPatternRenderer, type TestPatternRenderer } from "./test-pattern-renderer.js";
import {
  defaultTestPatternLimits,
  isTestPatternPlan,
  planTestPattern,
  type TestPatternDefaults,
  type TestPatternLimits,
  type TestPatternPlan,
} from "./test-pattern-plan.js";
import type { VideoPollResult, VideoProvider } from "./video-provider.js";
import { VideoProviderError } from "./video-provider-error.js";

/** Options for {@link createTestPatternProvider}. */
export interface TestPatternProviderOptions {
  /** Defaults of the bound model, used when the request leaves duration or size out. */
  defaults: TestPatternDefaults;
  /** Shared renderer; when absent the provider creates one and closes it in `close()`. */
  renderer?: TestPatternRenderer;
  limits?: TestPatternLimits;
  /** How long a finished render waits for its download before it is dropped. Default 10 minutes. */
  retainMs?: number;
}

/** A render in memory, from submission until download (or expiry). */
interface Entry {
  plan: TestPatternPlan;
  controller: AbortController;
  progress: { frames: number };
  result: Promise<Uint8Array>;
  bytes?: Uint8Array;
  failure?: VideoProviderError;
  expiry?: NodeJS.Timeout;
}

/** Slug of the embedded renderer: its `provider` value in the models file and its `provider.options` key. */
export const localProviderSlug = "local";

const idPrefix = "tp";
const downloadChunkBytes = 64 * 1024;

function encodeId(plan: TestPatternPlan): string {
  return `${idPrefix}.${randomBytes(8).toString("hex")}.${Buffer.from(JSON.stringify(plan)).toString("base64url")}`;
}

function decodeId(providerJobId: string, limits: TestPatternLimits): TestPatternPlan {
  const [prefix, nonce, encoded] = providerJobId.split(".");
  let plan: unknown;
  try {
    plan = prefix === idPrefix && nonce && encoded ? JSON.parse(Buffer.from(encoded, "base64url").toString()) : undefined;
  } catch {
    plan = undefined;
  }
  if (!isTestPatternPlan(plan, limits)) throw new VideoProviderError("not_found", "Unknown test pattern job.");
  return plan;
}

function asProviderError(error: unknown): VideoProviderError {
  return error instanceof VideoProviderError ? error : new VideoProviderError("generation_failed", "The test pattern renderer failed.", { cause: error });
}

/** Waits for a render, giving up (but not cancelling it) when `signal` fires. */
async function untilAborted(result: Promise<Uint8Array>, signal: AbortSignal | undefined): Promise<Uint8Array> {
  const abortedError = () => new VideoProviderError("aborted", "The download was aborted.");
  if (signal?.aborted) throw abortedError();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortedError());
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([result, aborted]);
  } catch (error) {
    throw asProviderError(error);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Creates the embedded `local/test-pattern` provider: a real H.264 MP4 of the
 * requested duration, rendered offline in a worker, so the whole job
 * lifecycle works without an upstream. The job id carries the render plan, so
 * after a restart `poll` or `download` simply renders the same bytes again.
 */
export function createTestPatternProvider(options: TestPatternProviderOptions): VideoProvider {
  const limits = options.limits ?? defaultTestPatternLimits;
  const retainMs = options.retainMs ?? 10 * 60_000;
  const ownsRenderer = options.renderer === undefined;
  const renderer = options.renderer ?? createTestPatternRenderer();
  const entries = new Map<string, Entry>();

  function forget(providerJobId: string): void {
    const entry = entries.get(providerJobId);
    if (!entry) return;
    clearTimeout(entry.expiry);
    entry.controller.abort();
    entries.delete(providerJobId);
  }

  function start(providerJobId: string, plan: TestPatternPlan): Entry {
    const controller = new AbortController();
    const progress = { frames: 0 };
    const result = renderer.render(plan, controller.signal, (frames) => (progress.frames = frames));
    const entry: Entry = { plan, controller, progress, result };
    result.then(
      (bytes) => (entry.bytes = bytes),
      (error: unknown) => (entry.failure = asProviderError(error)),
    ).finally(() => {
      if (entries.get(providerJobId) === entry) entry.expiry = setTimeout(() => forget(providerJobId), retainMs).unref();
    });
    entries.set(providerJobId, entry);
    return entry;
  }

  function entryFor(providerJobId: string): Entry {
    return entries.get(providerJobId) ?? start(providerJobId, decodeId(providerJobId, limits));
  }

  function status(entry: Entry): VideoPollResult {
    if (entry.failure) return { status: "failed", error: entry.failure.message };
    if (!entry.bytes) return { status: "in_progress", progress: Math.floor((entry.progress.frames * 100) / entry.plan.frameCount) };
    const { width, height, frameCount, fps } = entry.plan;
    return { status: "completed", progress: 100, outputs: [{ index: 0, contentType: "video/mp4", width, height, durationSeconds: frameCount / fps }] };
  }

  return {
    slug: localProviderSlug,
    pollIntervalMs: 250,
    async submit(request, submitOptions) {
      submitOptions?.signal?.throwIfAborted();
      const plan = planTestPattern(request, options.defaults, limits);
      const providerJobId = encodeId(plan);
      start(providerJobId, plan);
      return { providerJobId };
    },
    async poll(providerJobId) {
      return status(entryFor(providerJobId));
    },
    async *download(providerJobId, index, signal) {
      if (index !== 0) throw new VideoProviderError("not_found", `The test pattern has one output; index ${index} does not exist.`);
      const bytes = await untilAborted(entryFor(providerJobId).result, signal);
      for (let offset = 0; offset < bytes.byteLength; offset += downloadChunkBytes) {
        yield bytes.subarray(offset, offset + downloadChunkBytes);
      }
      forget(providerJobId);
    },
    async cancel(providerJobId) {
      forget(providerJobId);
    },
    async close() {
      for (const providerJobId of [...entries.keys()]) forget(providerJobId);
      if (ownsRenderer) await renderer.close();
    },
  };
}
