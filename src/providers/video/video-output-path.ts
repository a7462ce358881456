import { join } from "node:path";

/** Job ids become directory names, so only this alphabet is allowed. */
const safeJobId = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * The directory holding a job's outputs, `DATA_DIR/videos/<jobId>`: one
 * place that decides it, shared by the worker that writes and the content
 * route that reads. Refuses ids that could escape the directory.
 */
export function videoOutputDirectory(dataDir: string, jobId: string): string {
  if (!safeJobId.test(jobId)) throw new RangeError("A video job id must be 1 to 128 letters, digits, - or _.");
  return join(dataDir, "videos", jobId);
}

/** The file of output `index` of a job, `DATA_DIR/videos/<jobId>/<index>.mp4`. */
export function videoOutputPath(dataDir: string, jobId: string, index: number): string {
  if (!Number.isInteger(index) || index < 0) throw new RangeError("A video output index is an integer of at least 0.");
  return join(videoOutputDirectory(dataDir, jobId), `${index}.mp4`);
}
