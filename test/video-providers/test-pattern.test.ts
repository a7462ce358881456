import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, describe, expect, it } from "vitest";
import {
  createTestPatternProvider,
  createTestPatternRenderer,
  planTestPattern,
  VideoProviderError,
  type VideoGenerationRequest,
  type VideoPollResult,
  type VideoProvider,
} from "../../src/providers/video/index.js";
import { collect, mp4Info } from "./mp4-info.js";

const defaults = { durationSeconds: 5, size: "1280x720" };
const provider = createTestPatternProvider({ defaults });

afterAll(async () => {
  await provider.close();
});

async function untilDone(target: VideoProvider, providerJobId: string): Promise<VideoPollResult> {
  for (;;) {
    const result = await target.poll(providerJobId);
    if (result.status !== "in_progress") return result;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function render(request: Omit<VideoGenerationRequest, "model">, target: VideoProvider = provider): Promise<{ bytes: Buffer; result: VideoPollResult }> {
  const { providerJobId } = await target.submit({ model: "local/test-pattern", ...request });
  const result = await untilDone(target, providerJobId);
  return { bytes: await collect(target.download(providerJobId, 0)), result };
}

describe("local/test-pattern", () => {
  it("renders a real H.264 MP4 of the requested duration, scaled to 640 px on its long side", async () => {
    const { bytes, result } = await render({ prompt: "a teal ocean", duration: 3, resolution: "720p", aspect_ratio: "16:9", seed: 1 });

    expect(result).toEqual({
      status: "completed",
      progress: 100,
      outputs: [{ index: 0, contentType: "video/mp4", width: 640, height: 360, durationSeconds: 3 }],
    });
    const info = mp4Info(bytes);
    const [track] = info.videoTracks;
    expect(track.codec).toMatch(/^avc1\./);
    expect([track.track_width, track.track_height]).toEqual([640, 360]);
    expect(track.nb_samples).toBe(36);
    expect(Math.abs(info.duration / info.timescale - 3)).toBeLessThanOrEqual(1 / 12);
    expect(Math.abs(track.samples_duration / track.timescale - 3)).toBeLessThanOrEqual(1 / 12);
  });

  it("keeps portrait orientation and renders small sizes exactly", async () => {
    const portrait = mp4Info((await render({ prompt: "p", duration: 1, size: "720x1280", seed: 2 })).bytes).videoTracks[0];
    expect([portrait.track_width, portrait.track_height]).toEqual([360, 640]);
    const small = mp4Info((await render({ prompt: "s", duration: 2, size: "320x240", seed: 2 })).bytes);
    expect([small.videoTracks[0].track_width, small.videoTracks[0].track_height]).toEqual([320, 240]);
    expect(small.videoTracks[0].nb_samples).toBe(24);
  });

  it("is byte-identical for the same seed and parameters, and varies with seed and prompt", async () => {
    const request = { prompt: "a red fox in green grass", duration: 1, size: "640x360", seed: 42 };
    const [first, second, otherSeed, otherPrompt] = await Promise.all([
      render(request),
      render(request),
      render({ ...request, seed: 43 }),
      render({ ...request, prompt: "a purple night sky" }),
    ]);
    expect(first.bytes.equals(second.bytes)).toBe(true);
    expect(first.bytes.equals(otherSeed.bytes)).toBe(false);
    expect(first.bytes.equals(otherPrompt.bytes)).toBe(false);
  });

  it("lets prompt colours choose the palette", () => {
    const plan = (prompt: string) => planTestPattern({ model: "m", prompt, seed: 1 }, defaults).palette;
    expect(plan("red")).toEqual(plan("RED!!"));
    expect(plan("red")).not.toEqual(plan("blue"));
    expect(plan("a cat")).not.toEqual(plan("a dog"));
    expect(plan("a cat")).toEqual(plan("a cat"));
  });

  it("renders the same bytes again after a restart, from the job id alone", async () => {
    const request = { model: "local/test-pattern", prompt: "restart", duration: 1, seed: 9 };
    const { providerJobId } = await provider.submit(request);
    await untilDone(provider, providerJobId);
    const before = await collect(provider.download(providerJobId, 0));

    const restarted = createTestPatternProvider({ defaults });
    try {
      const result = await untilDone(restarted, providerJobId);
      expect(result.status).toBe("completed");
      expect((await collect(restarted.download(providerJobId, 0))).equals(before)).toBe(true);
    } finally {
      await restarted.close();
    }
  });

  it("keeps the event loop free while it encodes", async () => {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();
    const { bytes } = await render({ prompt: "timing", duration: 5, resolution: "720p", aspect_ratio: "16:9", seed: 5 });
    const elapsed = performance.now() - started;
    delay.disable();
    console.info(`5 s of 720p (rendered 640x360 at 12 fps): ${Math.round(elapsed)} ms, ${bytes.length} bytes, event loop delay max ${Math.round(delay.max / 1e6)} ms`);
    expect(delay.max / 1e6).toBeLessThan(150);
    expect(mp4Info(bytes).videoTracks[0].nb_samples).toBe(60);
  });

  it("refuses what it cannot render, with typed errors", async () => {
    const kind = (promise: Promise<unknown>) => promise.then(() => "resolved", (error: VideoProviderError) => error.kind);
    await expect(kind(provider.submit({ model: "m", duration: 0 }))).resolves.toBe("invalid_request");
    await expect(kind(provider.submit({ model: "m", duration: 61 }))).resolves.toBe("invalid_request");
    await expect(kind(provider.submit({ model: "m", size: "1280x720", aspect_ratio: "9:16" }))).resolves.toBe("invalid_request");
    await expect(kind(provider.poll("tp.0.bm9wZQ"))).resolves.toBe("not_found");
    await expect(kind(provider.poll("someone-elses-id"))).resolves.toBe("not_found");
    const { providerJobId } = await provider.submit({ model: "m", prompt: "x", duration: 1 });
    await expect(kind(collect(provider.download(providerJobId, 1)))).resolves.toBe("not_found");
    await provider.cancel(providerJobId);
  });
});

describe("test pattern renderer", () => {
  const plan = planTestPattern({ model: "m", prompt: "long", duration: 60, seed: 3 }, defaults);

  it("terminates the worker when a render is aborted", async () => {
    const renderer = createTestPatternRenderer({ maxConcurrent: 1 });
    const controller = new AbortController();
    const rendering = renderer.render(plan, controller.signal);
    setTimeout(() => controller.abort(), 100);
    const started = performance.now();
    await expect(rendering).rejects.toMatchObject({ kind: "aborted" });
    expect(performance.now() - started).toBeLessThan(1000);
    await renderer.close();
  });

  it("queues beyond its limit and aborts everything on close", async () => {
    const renderer = createTestPatternRenderer({ maxConcurrent: 1 });
    const outcomes = Promise.allSettled([renderer.render(plan), renderer.render(plan)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await renderer.close();
    const [running, queued] = await outcomes;
    expect(running).toMatchObject({ status: "rejected", reason: { kind: "aborted" } });
    expect(queued).toMatchObject({ status: "rejected", reason: { kind: "aborted" } });
    await expect(renderer.render(plan)).rejects.toMatchObject({ kind: "aborted" });
  });
});
