import type { SpeechFormat } from "./speech-engine.js";

/**
 * What the pool asks of an eSpeak worker. A job lives on one worker (its
 * resampler and MP3 encoder carry state across segments) and advances one
 * segment per message, so the pool paces it by what the consumer has read.
 */
export type EspeakWorkerRequest =
  | {
      readonly type: "segment";
      readonly job: number;
      /** Plain text; the worker escapes it, since eSpeak NG is driven in SSML mode. */
      readonly text: string;
      /** Canonical eSpeak voice: `language` or `language+variant`. */
      readonly voice: string;
      /** Words per minute. */
      readonly rate: number;
      readonly format: SpeechFormat;
      /** The final segment: the worker flushes the job's audio and forgets it. */
      readonly last: boolean;
    }
  | { readonly type: "cancel"; readonly job: number };

/** What an eSpeak worker reports back to the pool. */
export type EspeakWorkerEvent =
  | {
      readonly type: "ready";
      /**
       * Accepted language names and the eSpeak voice each loads: voice file
       * names (`en-us`, `fr`, `cmn`) map to themselves, language tags that
       * are not file names (`en-gb`, `zh`) to the voice that speaks them best.
       */
      readonly languages: readonly (readonly [name: string, voice: string])[];
      /** Voice variant names (`f3`, `m1`, `whisper`…) usable as `language+variant`. */
      readonly variants: readonly string[];
    }
  | { readonly type: "init-failed"; readonly message: string }
  | { readonly type: "audio"; readonly job: number; readonly bytes: Uint8Array }
  | { readonly type: "segment-done"; readonly job: number; readonly last: boolean }
  | { readonly type: "failed"; readonly job: number; readonly message: string };
