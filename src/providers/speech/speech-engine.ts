/** Audio encodings every speech engine must produce: `pcm` is raw 24 kHz mono 16-bit little-endian. */
export type SpeechFormat = "mp3" | "pcm";

/**
 * One part of a voice-cloning reference. Shaped like the proto message so the
 * core can hand its parsed request over unchanged; the core has already
 * checked the parts (one `input_audio` data URI, at most one `text`).
 */
export interface SpeechReference {
  readonly type: string;
  readonly inputAudio?: { readonly data: string; readonly format?: string };
  readonly text?: string;
}

/**
 * What an engine needs to synthesize, and nothing more: observability fields
 * (session id, user, trace) are deliberately absent so no engine can forward them.
 */
export interface SpeechRequest {
  /** Text to speak; the core has checked it is non-empty. */
  readonly input: string;
  /** Engine-specific voice identifier. */
  readonly voice: string;
  readonly format: SpeechFormat;
  /** Playback multiplier; each engine documents the range it honours. */
  readonly speed?: number;
  /** Voice-cloning reference; only engines with `supportsCloning` accept it. */
  readonly references?: readonly SpeechReference[];
  /** Provider passthrough options from the request's `provider` object. */
  readonly providerOptions?: Readonly<Record<string, unknown>>;
}

/**
 * A speech synthesizer behind SpeechService, so the core streams audio the
 * same way whether it is made in process or fetched from an upstream.
 *
 * Contract: every refusal of the request itself (voice, speed, references)
 * is thrown as a `SpeechProviderError` before the first chunk, so the core can
 * still answer with a status; failures later in the stream are thrown as
 * `SpeechProviderError` too. When `signal` aborts, iteration rejects with
 * `signal.reason`, and ending the iteration early (break/return) releases
 * every worker job, socket and timer the synthesis held.
 */
export interface SpeechEngine {
  /** The model id this engine serves, as in the models file. */
  readonly id: string;
  /** Whether `references` are honoured rather than refused. */
  readonly supportsCloning: boolean;
  /** Audio bytes in `request.format`, streamed as they are produced. */
  synthesize(request: SpeechRequest, signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /** Releases workers and connections; later syntheses fail as `unavailable`. */
  close(): Promise<void>;
  /** Resolves once the engine is warm; engines with nothing to warm omit it. */
  ready?(): Promise<void>;
}
