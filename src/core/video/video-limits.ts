import { observabilityIdChars } from "../observability-ids.js";

/**
 * The bounds VideoService enforces, in one place so the request check, the
 * Connect read limit and the bridge's body limit agree.
 *
 * - `idChars`: the spec's bound on `session_id` and `user` (checked by `observabilityIdsOf`).
 * - `bodyBytes`: 16 MiB of JSON, room for a first and a last frame as data
 *   URIs (a 1080p PNG is a few MB, 4/3 more in base64) beside the other
 *   members; the rest of the JSON surface keeps the 1 MiB limit.
 * - `contentChunkBytes`: the size of the pieces a video is streamed in.
 */
export const videoLimits = {
  idChars: observabilityIdChars,
  bodyBytes: 16 * 1024 * 1024,
  contentChunkBytes: 64 * 1024,
} as const;
