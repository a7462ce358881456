/**
 * Why a provider call failed, in terms the core can map onto its error
 * catalogue without knowing which engine was behind it.
 * - `invalid_request`: the provider refused the parameters (400/404/422 on submit); not retryable.
 * - `authentication`: the operator's key was refused (401/403); not retryable.
 * - `not_found`: the provider does not know this job or output.
 * - `rate_limited`: 429; retryable after `retryAfterMs` when known.
 * - `overloaded`: 529 or 503 with an overload body; retryable.
 * - `unavailable`: network error or 5xx; retryable.
 * - `timeout`: no answer within the configured budget; retryable.
 * - `bad_response`: the provider answered with something we cannot read.
 * - `generation_failed`: the job itself failed at the provider.
 * - `aborted`: the caller's signal fired.
 */
export type VideoProviderErrorKind =
  | "invalid_request"
  | "authentication"
  | "not_found"
  | "rate_limited"
  | "overloaded"
  | "unavailable"
  | "timeout"
  | "bad_response"
  | "generation_failed"
  | "aborted";

const retryableKinds: ReadonlySet<VideoProviderErrorKind> = new Set(["rate_limited", "overloaded", "unavailable", "timeout"]);

/** Options for {@link VideoProviderError}. */
export interface VideoProviderErrorOptions {
  /** HTTP status the upstream answered with, when there was one. */
  upstreamStatus?: number;
  /** The upstream's own error code (`moderation_blocked`, …), when given. */
  upstreamCode?: string;
  retryAfterMs?: number;
  cause?: unknown;
}

/**
 * The one error type providers throw, so the job worker can decide between
 * retrying, failing the job and reporting a misconfiguration. Messages never
 * carry keys or prompts.
 */
export class VideoProviderError extends Error {
  override readonly name = "VideoProviderError";
  readonly kind: VideoProviderErrorKind;
  readonly retryable: boolean;
  readonly upstreamStatus?: number;
  readonly upstreamCode?: string;
  readonly retryAfterMs?: number;

  constructor(kind: VideoProviderErrorKind, message: string, options: VideoProviderErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.kind = kind;
    this.retryable = retryableKinds.has(kind);
    this.upstreamStatus = options.upstreamStatus;
    this.upstreamCode = options.upstreamCode;
    this.retryAfterMs = options.retryAfterMs;
  }
}
