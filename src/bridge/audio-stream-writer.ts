import type { ServerResponse } from "node:http";

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
    async write(bytes: Uint8Array): Promise<boolean> {
      if (response.destroyed) return false;
      if (!response.write(bytes)) {
        await new Promise<void>((resolve) => {
          const settle = () => {
            response.off("drain", settle);
            response.off("close", settle);
            resolve();
          };
          response.on("drain", settle);
          response.on("close", settle);
        });
      }
      return !response.destroyed;
    },
    end: () => response.end(),
  };
}
