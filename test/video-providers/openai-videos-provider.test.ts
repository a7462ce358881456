import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createOpenAiVideosProvider,
  runVideoJob,
  VideoProviderError,
  videoOutputPath,
  type OpenAiVideosProviderOptions,
  type VideoGenerationRequest,
  type VideoModelCapabilities,
  type VideoPollResult,
} from "../../src/providers/video/index.js";
import { collect } from "./mp4-info.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./fake-openai-videos.js";

const apiKey = "sk-test-key";

const capabilities: VideoModelCapabilities = {
  promptOptional: false,
  upscaling: false,
  generateAudio: true,
  audioReferences: false,
  videoReferences: true,
  seed: true,
  durations: [4, 8, 12],
  maxDurationSeconds: 12,
  defaultDurationSeconds: 4,
  sizes: ["1280x720", "720x1280"],
  defaultSize: "1280x720",
};

let upstream: FakeOpenAiVideos;
let dataDir: string;

beforeAll(async () => {
  upstream = await startFakeOpenAiVideos(apiKey);
  dataDir = await mkdtemp(join(tmpdir(), "switchboard-video-"));
});

afterAll(async () => {
  await upstream.close();
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  upstream.requests.length = 0;
});

function provider(overrides: Partial<OpenAiVideosProviderOptions> = {}) {
  return createOpenAiVideosProvider({
    slug: "openai",
    baseUrl: upstream.baseUrl,
    apiKey,
    headers: { "OpenAI-Project": "proj_test" },
    upstreamModel: "sora-2",
    capabilities,
    forward: ["seed", "input_references"],
    pollIntervalMs: 5,
    ...overrides,
  });
}

async function failure(promise: Promise<unknown>): Promise<VideoProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof VideoProviderError) return error;
    throw error;
  }
  throw new Error("expected a VideoProviderError");
}

describe("OpenAI-videos-compatible upstream", () => {
  it("submits the OpenAI body with the key, forwarded members and its own passthrough, and nothing identifying the caller", async () => {
    const request = {
      model: "openai/sora-2",
      prompt: "a fox in the snow",
      duration: 8,
      resolution: "720p",
      aspect_ratio: "9:16",
      seed: 7,
      generate_audio: true,
      frame_images: [{ type: "image_url", image_url: { url: "https://img.example/first.png" }, frame_type: "first_frame" }],
      input_references: [
        { type: "image_url", image_url: { url: "https://img.example/ref.png" } },
        { type: "audio_url", audio_url: { url: "https://img.example/ref.mp3" } },
        { type: "video_url", video_url: { url: "https://img.example/ref.mp4" } },
      ],
      provider: { options: { openai: { quality: "high", user: "leak", session_id: "leak", trace: "leak", model: "other" }, runway: { ratio: "x" } } },
      // Members the core must never pass on; the adapter drops them even if it receives them.
      user: "end-user-1",
      session_id: "session-1",
      trace: { trace_id: "t-1" },
      callback_url: "https://hooks.example/",
    } as VideoGenerationRequest;

    const { providerJobId } = await provider().submit(request);

    expect(providerJobId).toBe("video_1");
    const [sent] = upstream.requests;
    expect(sent.method).toBe("POST");
    expect(sent.path).toBe("/v1/videos");
    expect(sent.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(sent.headers["content-type"]).toBe("application/json");
    expect(sent.headers["openai-project"]).toBe("proj_test");
    expect(sent.body).toEqual({
      model: "sora-2",
      prompt: "a fox in the snow",
      seconds: "8",
      size: "720x1280",
      input_reference: { image_url: "https://img.example/first.png" },
      seed: 7,
      input_references: [
        { type: "image_url", image_url: { url: "https://img.example/ref.png" } },
        { type: "video_url", video_url: { url: "https://img.example/ref.mp4" } },
      ],
      quality: "high",
    });
  });

  it("sends the job's idempotency key with the submit, and none when it has none", async () => {
    const videos = provider();
    const first = await videos.submit({ model: "m", prompt: "once" }, { idempotencyKey: "video_job_1" });
    const repeated = await videos.submit({ model: "m", prompt: "once" }, { idempotencyKey: "video_job_1" });
    await videos.submit({ model: "m", prompt: "keyless" });

    expect(upstream.requests.map((request) => request.headers["idempotency-key"])).toEqual(["video_job_1", "video_job_1", undefined]);
    // The fake answers a repeated key as OpenAI-style APIs do: with the job it already started.
    expect(repeated.providerJobId).toBe(first.providerJobId);
  });

  it("sends the model's default duration and size when the request names none", async () => {
    await provider({ forward: [] }).submit({ model: "openai/sora-2", prompt: "defaults", input_references: [{ type: "image_url", image_url: { url: "https://i/x.png" } }] });
    expect(upstream.requests[0].body).toEqual({
      model: "sora-2",
      prompt: "defaults",
      seconds: "4",
      size: "1280x720",
      input_reference: { image_url: "https://i/x.png" },
    });
  });

  it("polls through queued and in_progress to completed, then streams the content", async () => {
    const videos = provider();
    const { providerJobId } = await videos.submit({ model: "m", prompt: "poll me", duration: 4, size: "1280x720" });
    const seen: VideoPollResult[] = [];
    for (let i = 0; i < 3; i++) seen.push(await videos.poll(providerJobId));
    expect(seen).toEqual([
      { status: "in_progress", progress: 0 },
      { status: "in_progress", progress: 40 },
      { status: "completed", progress: 100, outputs: [{ index: 0, contentType: "video/mp4", width: 1280, height: 720, durationSeconds: 4 }] },
    ]);
    expect((await collect(videos.download(providerJobId, 0))).equals(upstream.content)).toBe(true);
    expect(upstream.requests.at(-1)).toMatchObject({ method: "GET", path: `/v1/videos/${providerJobId}/content` });
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Bearer ${apiKey}`);
    await expect(failure(collect(videos.download(providerJobId, 1)))).resolves.toMatchObject({ kind: "not_found" });
  });

  it("runs a job to completion and stores the MP4 under DATA_DIR/videos/<job>/<index>.mp4, riding out a 503", async () => {
    const videos = provider();
    const submitted: string[] = [];
    let polled = 0;
    const result = await runVideoJob({
      provider: videos,
      request: { model: "m", prompt: "store me", duration: 4 },
      dataDir,
      jobId: "job_stored",
      onSubmitted: (id) => {
        submitted.push(id);
        upstream.answerNext({ status: 503, body: JSON.stringify({ error: { message: "busy" } }) });
      },
      onPoll: () => void polled++,
    });
    const path = videoOutputPath(dataDir, "job_stored", 0);
    expect(result).toEqual({
      providerJobId: submitted[0],
      outputs: [{ index: 0, contentType: "video/mp4", width: 1280, height: 720, durationSeconds: 4, path, bytes: upstream.content.length }],
    });
    expect(path).toBe(join(dataDir, "videos", "job_stored", "0.mp4"));
    expect((await readFile(path)).equals(upstream.content)).toBe(true);
    expect(await readdir(join(dataDir, "videos", "job_stored"))).toEqual(["0.mp4"]);
    expect(polled).toBe(3);
  });

  it("resumes polling with a stored id instead of submitting again", async () => {
    const videos = provider();
    const { providerJobId } = await videos.submit({ model: "m", prompt: "resume", duration: 4 });
    upstream.requests.length = 0;
    await runVideoJob({ provider: videos, request: { model: "m", prompt: "resume" }, dataDir, jobId: "job_resumed", providerJobId });
    expect(upstream.requests.filter((request) => request.method === "POST")).toEqual([]);
  });

  it("reports a failed generation with the upstream's reason, and runVideoJob throws generation_failed", async () => {
    const videos = provider();
    const error = await failure(runVideoJob({ provider: videos, request: { model: "m", prompt: "something forbidden" }, dataDir, jobId: "job_failed" }));
    expect(error).toMatchObject({ kind: "generation_failed", retryable: false, message: "Your request was blocked by our moderation system." });
    await expect(readdir(join(dataDir, "videos"))).resolves.not.toContain("job_failed");
  });

  it("maps HTTP failures to typed errors", async () => {
    const videos = provider();
    const request = { model: "m", prompt: "errors" };

    upstream.answerNext({ status: 400, body: JSON.stringify({ error: { message: "Invalid size.", code: "invalid_size" } }) });
    await expect(failure(videos.submit(request))).resolves.toMatchObject({
      kind: "invalid_request",
      retryable: false,
      upstreamStatus: 400,
      upstreamCode: "invalid_size",
      message: "The video provider refused the submit (HTTP 400): Invalid size.",
    });

    await expect(failure(provider({ apiKey: "sk-wrong" }).submit(request))).resolves.toMatchObject({ kind: "authentication", retryable: false, upstreamStatus: 401 });

    upstream.answerNext({ status: 429, headers: { "retry-after": "2" }, body: "{}" });
    await expect(failure(videos.submit(request))).resolves.toMatchObject({ kind: "rate_limited", retryable: true, retryAfterMs: 2000 });

    upstream.answerNext({ status: 500, body: "oops" });
    await expect(failure(videos.submit(request))).resolves.toMatchObject({ kind: "unavailable", retryable: true, message: "The video provider refused the submit (HTTP 500)." });

    upstream.answerNext({ status: 529, body: "{}" });
    await expect(failure(videos.poll("video_1"))).resolves.toMatchObject({ kind: "overloaded", retryable: true });

    await expect(failure(videos.poll("video_missing"))).resolves.toMatchObject({ kind: "not_found", upstreamStatus: 404 });

    upstream.answerNext({ status: 200, body: "not json" });
    await expect(failure(videos.poll("video_1"))).resolves.toMatchObject({ kind: "bad_response" });

    upstream.answerNext({ status: 200, body: JSON.stringify({ id: "video_1", status: "dreaming" }) });
    await expect(failure(videos.poll("video_1"))).resolves.toMatchObject({ kind: "bad_response" });

    upstream.answerNext({ status: 200, body: JSON.stringify({ status: "queued" }) });
    await expect(failure(videos.submit(request))).resolves.toMatchObject({ kind: "bad_response", message: "The video provider returned no job id." });
  });

  it("maps an unreachable upstream, a timeout and an abort", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(failure(provider({ baseUrl: `http://127.0.0.1:${port}/v1` }).poll("video_1"))).resolves.toMatchObject({ kind: "unavailable", retryable: true });

    upstream.answerNext({ status: 0, hang: true });
    await expect(failure(provider({ timeoutMs: 150 }).poll("video_1"))).resolves.toMatchObject({ kind: "timeout", retryable: true });

    upstream.answerNext({ status: 0, hang: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(failure(provider().poll("video_1", controller.signal))).resolves.toMatchObject({ kind: "aborted", retryable: false });
  });

  it("releases the upstream connection when the consumer stops reading early", async () => {
    const videos = provider();
    const { providerJobId } = await videos.submit({ model: "m", prompt: "early" });
    for await (const chunk of videos.download(providerJobId, 0)) {
      expect(chunk.byteLength).toBeGreaterThan(0);
      break;
    }
    await upstream.contentAborted();
  });

  it("cancels with DELETE and treats an unknown job as already gone", async () => {
    const videos = provider();
    const { providerJobId } = await videos.submit({ model: "m", prompt: "cancel" });
    await videos.cancel(providerJobId);
    expect(upstream.requests.at(-1)).toMatchObject({ method: "DELETE", path: `/v1/videos/${providerJobId}` });
    await expect(videos.cancel(providerJobId)).resolves.toBeUndefined();
  });
});
