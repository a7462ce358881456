/**
 * The contract between the video job worker and a video engine. A provider is
 * bound to one model: the registry creates it with the upstream model id and
 * the operator's settings, so `submit` needs only the caller's request.
 */

/** A frame image pinned to the start or the end of the video. */
export interface VideoFrameImage {
  type: "image_url";
  image_url: { url: string };
  frame_type: "first_frame" | "last_frame";
}

/** An image, audio or video reference, as in the public request. */
export type VideoInputReference =
  | { type: "image_url"; image_url: { url: string } }
  | { type: "audio_url"; audio_url: { url: string } }
  | { type: "video_url"; video_url: { url: string } };

/**
 * What a provider may see of a validated `POST /videos` request, under the
 * public wire names (DESIGN.md §5). `session_id`, `user`, `trace` and
 * `callback_url` are absent on purpose: they are never sent to a provider,
 * and leaving them out of the type makes that structural.
 */
export interface VideoGenerationRequest {
  /** Public model id; the bound provider already knows its upstream id. */
  model: string;
  prompt?: string;
  aspect_ratio?: string;
  resolution?: string;
  /** Seconds, an integer of at least 1. */
  duration?: number;
  /** `WIDTHxHEIGHT`. */
  size?: string;
  seed?: number;
  generate_audio?: boolean;
  creativity?: number;
  upscale_factor?: number;
  frame_images?: VideoFrameImage[];
  input_references?: VideoInputReference[];
  /** `provider` member: `{options: {"<provider-slug>": {...}}}`; each provider reads only its own slug. */
  provider?: { options?: Record<string, Record<string, unknown>> };
}

/** Options of {@link VideoProvider.submit}. */
export interface VideoSubmitOptions {
  signal?: AbortSignal;
  /**
   * The same for every submit of one job (our job id), so a provider that
   * honours `Idempotency-Key` answers a submit repeated after a crash with
   * the job it already started, instead of starting (and billing) another.
   */
  idempotencyKey?: string;
}

/** Returned by {@link VideoProvider.submit}: the handle to persist before polling. */
export interface VideoSubmission {
  providerJobId: string;
}

/** One downloadable result of a completed job. */
export interface VideoOutput {
  index: number;
  contentType: "video/mp4";
  width?: number;
  height?: number;
  durationSeconds?: number;
}

/** A provider-side job state, reduced to what the job worker acts on. */
export type VideoProviderJobStatus = "in_progress" | "completed" | "failed";

/** Returned by {@link VideoProvider.poll}. */
export interface VideoPollResult {
  status: VideoProviderJobStatus;
  /** Completion estimate 0..100, when the provider reports one. */
  progress?: number;
  /** Present when `status` is `failed`: a message fit for the job's public `error`. */
  error?: string;
  /** Present when `status` is `completed`. */
  outputs?: VideoOutput[];
}

/**
 * A video engine bound to one model. The job worker calls `submit` once,
 * stores `providerJobId`, polls until a terminal status, then downloads each
 * output; after a restart it resumes polling with the stored id. Failures
 * throw {@link VideoProviderError} (see `video-provider-error.ts`).
 */
export interface VideoProvider {
  /** Slug under which the caller's `provider.options` are read (`local`, `openai`, …). */
  readonly slug: string;
  /** Suggested pause between polls, so a local render is not polled like a remote one. */
  readonly pollIntervalMs: number;
  submit(request: VideoGenerationRequest, options?: VideoSubmitOptions): Promise<VideoSubmission>;
  poll(providerJobId: string, signal?: AbortSignal): Promise<VideoPollResult>;
  /** Streams the MP4 bytes of output `index`; breaking out of the loop releases the connection. */
  download(providerJobId: string, index: number, signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /** Best effort: asks the provider to stop and forget the job. */
  cancel(providerJobId: string, signal?: AbortSignal): Promise<void>;
  /** Releases workers, timers and cached results; the provider is unusable afterwards. */
  close(): Promise<void>;
}
