import { createFile, MP4BoxBuffer, type Movie } from "mp4box";

/** Parses an MP4 with mp4box, as an independent check of what the renderer wrote. */
export function mp4Info(bytes: Uint8Array): Movie {
  const file = createFile();
  let info: Movie | undefined;
  let failure: string | undefined;
  file.onReady = (movie) => (info = movie);
  file.onError = (module, message) => (failure = `${module}: ${message}`);
  const copy = bytes.slice();
  file.appendBuffer(MP4BoxBuffer.fromArrayBuffer(copy.buffer, 0), true);
  file.flush();
  if (!info) throw new Error(`mp4box could not parse the file${failure ? `: ${failure}` : ""}`);
  return info;
}

/** Collects a download into one buffer. */
export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}
