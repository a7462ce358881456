import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type { VideoGenerationRequest, VideoOutput, VideoPollResult, VideoProvider, VideoSubmitOptions } from "./video-provider.js";
import { VideoProviderError } from "./video-provider-error.js";
import { videoOutputDirectory, videoOutputPath } from "./video-output-path.js";

/** Options for {@link runVideoJob}. */
export interface RunVideoJobOptions {
  provider: VideoProvider;
  request: VideoGenerationRequest;
  dataDir: string;
  jobId: string;
  /** The id stored by an earlier run of this job: polling resumes and nothing is submitted (or paid for) twice. */
  providerJobId?: string;
  /** Sent with the submit; see {@link VideoSubmitOptions.idempotencyKey}. */
  idempotencyKey?: string;
  /**
   * Aborts the submit; default `signal`. Leave a shutdown out of it: a submit
   * the provider accepted but we stopped waiting for is a job it bills and
   * nobody polls, so a submit in flight is let finish and its id stored.
   */
  submitSignal?: AbortSignal;
  /** Called once the provider accepted the job; persist the id here, before any polling. */
  onSubmitted?: (providerJobId: string) => void | Promise<void>;
  /** Called with every poll answer, e.g. to move the job to `in_progress`. */
  onPoll?: (result: VideoPollResult) => void | Promise<void>;
  /** Default: the provider's own suggestion. */
  pollIntervalMs?: number;
  /** Consecutive retryable poll or download failures tolerated before giving up. Default 5. */
  maxTransientFailures?: number;
  /** Aborts polling and downloads; pass the job's time to live as `AbortSignal.timeout(…)` too. */
  signal?: AbortSignal;
}

/** A stored output of a finished job. */
export interface StoredVideoOutput extends VideoOutput {
  path: string;
  bytes: number;
}

/** Result of {@link runVideoJob}. */
export interface VideoJobResult {
  providerJobId: string;
  outputs: StoredVideoOutput[];
}

/** Longest pause between retries of a transient failure. */
const maxRetryPauseMs = 60_000;

/**
 * Runs a video job to completion for the job worker: submit (unless
 * resuming), poll until terminal, then store every output under
 * `DATA_DIR/videos/<jobId>/<index>.mp4`. A file appears under its final name
 * only once complete. Transient poll and download failures are retried;
 * submission is not, since a retried submit may be charged twice — the queue
 * decides. A failed generation throws `generation_failed` with the
 * provider's reason.
 */
export async function runVideoJob(options: RunVideoJobOptions): Promise<VideoJobResult> {
  const { provider, signal } = options;
  const interval = options.pollIntervalMs ?? provider.pollIntervalMs;
  const maxTransientFailures = options.maxTransientFailures ?? 5;

  async function retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let failures = 0; ; failures++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof VideoProviderError && error.retryable) || failures >= maxTransientFailures) throw error;
        await pause(Math.min(maxRetryPauseMs, error.retryAfterMs ?? interval * 2 ** failures));
      }
    }
  }

  async function pause(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal });
    } catch (error) {
      throw new VideoProviderError("aborted", "The video job was aborted.", { cause: error });
    }
  }

  let providerJobId = options.providerJobId;
  if (providerJobId === undefined) {
    const submitSignal = options.submitSignal ?? signal;
    providerJobId = (await provider.submit(options.request, { signal: submitSignal, idempotencyKey: options.idempotencyKey })).providerJobId;
    await options.onSubmitted?.(providerJobId);
  }
  const jobId = providerJobId;

  let result = await retrying(() => provider.poll(jobId, signal));
  await options.onPoll?.(result);
  while (result.status === "in_progress") {
    await pause(interval);
    result = await retrying(() => provider.poll(jobId, signal));
    await options.onPoll?.(result);
  }
  if (result.status === "failed") throw new VideoProviderError("generation_failed", result.error ?? "The video provider failed the job.");

  await mkdir(videoOutputDirectory(options.dataDir, options.jobId), { recursive: true });
  const outputs: StoredVideoOutput[] = [];
  for (const output of result.outputs ?? [{ index: 0, contentType: "video/mp4" as const }]) {
    const path = videoOutputPath(options.dataDir, options.jobId, output.index);
    await retrying(() => store(provider.download(jobId, output.index, signal), path, signal));
    outputs.push({ ...output, path, bytes: (await stat(path)).size });
  }
  return { providerJobId: jobId, outputs };
}

/** Writes a download to `<path>.partial`, then renames it; the partial file is removed on any failure. */
async function store(content: AsyncIterable<Uint8Array>, path: string, signal: AbortSignal | undefined): Promise<void> {
  const partial = `${path}.partial`;
  try {
    await pipeline(Readable.from(content, { objectMode: false }), createWriteStream(partial), { signal });
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    if (error instanceof VideoProviderError) throw error;
    if (signal?.aborted) throw new VideoProviderError("aborted", "The video job was aborted.", { cause: error });
    throw error;
  }
}
