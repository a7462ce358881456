import type { ServerResponse } from "node:http";

/**
 * Writes `chunk`; when the socket's buffer is full, waits until it drains or
 * the client goes (a departed client never drains, and waiting on `drain`
 * alone would hold the handler forever). Resolves false once the client has
 * gone, so the caller stops producing.
 */
export async function writeOrWait(response: ServerResponse, chunk: string | Uint8Array): Promise<boolean> {
  if (response.destroyed) return false;
  if (!response.write(chunk)) {
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
}
