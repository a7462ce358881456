import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestPatternProvider,
  runVideoJob,
  VideoProviderError,
  videoOutputPath,
  type VideoPollResult,
  type VideoProvider,
} from "../../src/providers/video/index.js";
import { mp4Info } from "./mp4-info.js";

let dataDir: string;
const local = createTestPatternProvider({ defaults: { durationSeconds: 5, size: "1280x720" } });

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "switchboard-run-video-"));
});

afterAll(async () => {
  await local.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** A provider double whose download sends one chunk and then stalls until aborted. */
function stallingProvider(pollFailures: VideoProviderError[] = []): VideoProvider {
  return {
    slug: "stall",
    pollIntervalMs: 1,
    submit: async () => ({ providerJobId: "stall-1" }),
    poll: async () => {
      const failure = pollFailures.shift();
      if (failure) throw failure;
      return { status: "completed", outputs: [{ index: 0, contentType: "video/mp4" }] };
    },
    async *download(_id, _index, signal) {
      yield new Uint8Array([1, 2, 3]);
      await new Promise((_, reject) => signal?.addEventListener("abort", () => reject(new VideoProviderError("aborted", "stop")), { once: true }));
    },
    cancel: async () => undefined,
    close: async () => undefined,
  };
}

describe("runVideoJob", () => {
  it("runs the local renderer to a stored MP4", async () => {
    const submitted: string[] = [];
    const statuses: VideoPollResult["status"][] = [];
    const result = await runVideoJob({
      provider: local,
      request: { model: "local/test-pattern", prompt: "stored", duration: 2, seed: 1 },
      dataDir,
      jobId: "job_local",
      onSubmitted: (id) => void submitted.push(id),
      onPoll: (poll) => void statuses.push(poll.status),
    });
    const path = join(dataDir, "videos", "job_local", "0.mp4");
    expect(result).toEqual({
      providerJobId: submitted[0],
      outputs: [{ index: 0, contentType: "video/mp4", width: 640, height: 360, durationSeconds: 2, path, bytes: expect.any(Number) }],
    });
    expect(statuses.at(-1)).toBe("completed");
    expect(mp4Info(await readFile(path)).videoTracks[0].nb_samples).toBe(24);
  });

  it("leaves no file behind when aborted mid-download", async () => {
    const controller = new AbortController();
    const running = runVideoJob({ provider: stallingProvider(), request: { model: "m" }, dataDir, jobId: "job_aborted", signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(running).rejects.toMatchObject({ kind: "aborted" });
    expect(await readdir(join(dataDir, "videos", "job_aborted"))).toEqual([]);
  });

  it("retries transient poll failures, up to a limit", async () => {
    const unavailable = () => new VideoProviderError("unavailable", "down");
    const controller = new AbortController();
    const riding = runVideoJob({ provider: stallingProvider([unavailable(), unavailable()]), request: { model: "m" }, dataDir, jobId: "job_rides", signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(riding).rejects.toMatchObject({ kind: "aborted" });

    const failing = runVideoJob({
      provider: stallingProvider([unavailable(), unavailable(), unavailable()]),
      request: { model: "m" },
      dataDir,
      jobId: "job_gives_up",
      maxTransientFailures: 2,
    });
    await expect(failing).rejects.toMatchObject({ kind: "unavailable", message: "down" });
  });

  it("keeps job ids from escaping DATA_DIR/videos", () => {
    expect(videoOutputPath("/data", "job_1", 2)).toBe(join("/data", "videos", "job_1", "2.mp4"));
    expect(() => videoOutputPath("/data", "../etc", 0)).toThrow(RangeError);
    expect(() => videoOutputPath("/data", "a/b", 0)).toThrow(RangeError);
    expect(() => videoOutputPath("/data", "job", -1)).toThrow(RangeError);
  });
});
