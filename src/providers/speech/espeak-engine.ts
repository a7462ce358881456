import { abortable } from "./abortable.js";
import { createEspeakPool, type EspeakPoolOptions } from "./espeak-pool.js";
import { createEspeakVoiceCatalogue, type EspeakVoiceCatalogue } from "./espeak-voices.js";
import type { SpeechEngine, SpeechRequest } from "./speech-engine.js";
import { SpeechProviderError } from "./speech-provider-error.js";
import { splitSentences } from "./split-sentences.js";

/** Model id of the embedded engine; always present in the registry. */
export const espeakModelId = "local/espeak-ng";

/**
 * Speeds the embedded engine honours. eSpeak NG speaks 80–450 words per
 * minute and 1.0 is its default 175, so 0.5–2.5 is what it can render
 * faithfully; anything outside is refused rather than silently clamped.
 */
export const espeakSpeedRange = { min: 0.5, max: 2.5 } as const;

/** eSpeak NG's default speaking rate in words per minute, i.e. speed 1.0. */
const normalRate = 175;

/** Options for {@link createEspeakEngine}. */
export interface EspeakEngineOptions extends EspeakPoolOptions {
  /**
   * Longest text handed to a worker at once (characters); longer sentences are
   * cut at a clause or word. Bounds how long one job holds a shared worker.
   */
  readonly maxSegmentChars?: number;
}

/** The embedded engine, with what a server needs beyond {@link SpeechEngine}. */
export interface EspeakEngine extends SpeechEngine {
  /** Resolves once a worker is warm; rejects with `unavailable` if none can start. */
  ready(): Promise<void>;
  /** Accepted voice names (without `+variant` combinations), for listings and errors. */
  voices(): Promise<readonly string[]>;
}

/**
 * Creates the embedded `local/espeak-ng` engine: eSpeak NG WebAssembly in a
 * pool of worker threads, 24 kHz mono output as raw pcm or MP3, streamed
 * sentence by sentence. It is free, needs no network, and cannot clone voices.
 * Workers start warming up immediately; call `close()` on shutdown.
 */
export function createEspeakEngine(options: EspeakEngineOptions = {}): EspeakEngine {
  const maxSegmentChars = options.maxSegmentChars ?? 250;
  if (!Number.isInteger(maxSegmentChars) || maxSegmentChars < 20) {
    throw new RangeError(`maxSegmentChars must be an integer of at least 20, got ${maxSegmentChars}`);
  }
  const pool = createEspeakPool(options);
  let catalogue: Promise<EspeakVoiceCatalogue> | undefined;

  function voiceCatalogue(): Promise<EspeakVoiceCatalogue> {
    catalogue ??= pool.ready().then((inventory) => createEspeakVoiceCatalogue(inventory.languages, inventory.variants));
    return catalogue;
  }

  async function* synthesize(request: SpeechRequest, signal?: AbortSignal): AsyncGenerator<Uint8Array, void, undefined> {
    signal?.throwIfAborted();
    if (request.references !== undefined && request.references.length > 0) {
      throw new SpeechProviderError(
        "bad_request",
        `${espeakModelId} does not support voice cloning; remove input_references or choose a model that supports cloning.`,
      );
    }
    const rate = rateFor(request.speed);
    // Whitespace-only input is exactly the input splitSentences yields nothing for.
    if (request.input.trim() === "") throw new SpeechProviderError("bad_request", "input has no text to speak.");
    const { voice, language } = (await abortable(voiceCatalogue(), signal)).resolve(request.voice);
    const segments = splitSentences(request.input, language, maxSegmentChars);
    yield* pool.run({ segments, voice, rate, format: request.format }, signal);
  }

  return {
    id: espeakModelId,
    supportsCloning: false,
    synthesize,
    close: () => pool.close(),
    ready: async () => {
      await pool.ready();
    },
    voices: async () => (await voiceCatalogue()).names,
  };
}

function rateFor(speed: number | undefined): number {
  if (speed === undefined) return normalRate;
  if (!Number.isFinite(speed) || speed < espeakSpeedRange.min || speed > espeakSpeedRange.max) {
    throw new SpeechProviderError(
      "bad_request",
      `speed must be between ${espeakSpeedRange.min} and ${espeakSpeedRange.max} for ${espeakModelId}, got ${speed}.`,
    );
  }
  return Math.round(normalRate * speed);
}
