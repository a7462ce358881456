/**
 * Why a synthesis failed, in terms the core maps onto the error catalogue:
 * `bad_request` → `bad_request` (400), `provider_error` → `provider_error` (502),
 * `unavailable` → `service_unavailable` (503), `timeout` → `provider_timeout` (524),
 * `overloaded` → `provider_overloaded` (529).
 */
export type SpeechProviderErrorKind = "bad_request" | "provider_error" | "unavailable" | "timeout" | "overloaded";

/** Options for {@link SpeechProviderError}. */
export interface SpeechProviderErrorOptions {
  /** HTTP status the upstream answered with, for logs; absent for the embedded engine. */
  readonly upstreamStatus?: number;
  readonly cause?: unknown;
}

/**
 * The one error type speech engines throw, so the core can choose a catalogue
 * entry from `kind` without knowing which engine failed. `message` is safe to
 * show the caller: it never holds a key, and holds upstream text only for
 * `bad_request`, where the caller needs it to fix the request.
 */
export class SpeechProviderError extends Error {
  override readonly name = "SpeechProviderError";
  readonly kind: SpeechProviderErrorKind;
  readonly upstreamStatus: number | undefined;

  constructor(kind: SpeechProviderErrorKind, message: string, options: SpeechProviderErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.kind = kind;
    this.upstreamStatus = options.upstreamStatus;
  }
}
