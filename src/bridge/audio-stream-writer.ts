import type { ServerResponse } from "node:http";
import { writeOrWait } from "./write-or-wait.js";

/**
 * Writes a raw audio body as it is produced: chunked (no Content-Length, the
 * length is not known until the engine ends), and with backpressure, so a
 * slow listener pauses the synthesis instead of growing memory.
 */
export function createAudioStreamWriter(response: ServerResponse) {
  return {
    open(contentType: string, headers: Record<string, string>) {
      response.writeHead(200, { "content-type": contentType, "x-accel-buffering": "no", ...headers });
      response.flushHeaders();
    },
    /** Resolves false once the client has gone, so the caller stops producing. */
    write: (bytes: Uint8Array) => writeOrWait(response, bytes),
    end: () => response.end(),
  };
}
