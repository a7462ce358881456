import { observabilityIdChars } from "../observability-ids.js";

/**
 * The bounds SpeechService enforces, in one place so the request check, the
 * Connect read limit and the bridge's body limit agree.
 *
 * - `inputChars`: 4096 Unicode code points, OpenAI's own limit for
 *   `/audio/speech`, so a request that works there works here; it also bounds
 *   how long one synthesis holds a shared eSpeak worker.
 * - `idChars`: the spec's bound on `session_id` and `user` (checked by
 *   `observabilityIdsOf`), also taken for `model`.
 * - `referenceAudioBytes`: 10 MiB of decoded reference audio, a minute of
 *   24 kHz 16-bit WAV or several minutes of MP3; cloning needs seconds.
 * - `bodyBytes`: 16 MiB of JSON, room for the base64 of a maximal reference
 *   (4/3 of 10 MiB, about 13.4 MiB) plus the other members; the rest of the
 *   JSON surface keeps the 1 MiB limit.
 * - `upstreamSpeed`: the range OpenAI documents for `speed`; the embedded
 *   engine has a narrower one of its own (`espeakSpeedRange`).
 */
export const speechLimits = {
  inputChars: 4096,
  idChars: observabilityIdChars,
  referenceTextChars: 4096,
  referenceAudioBytes: 10 * 1024 * 1024,
  bodyBytes: 16 * 1024 * 1024,
  upstreamSpeed: { min: 0.25, max: 4 },
} as const;
