import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadVideoModels, priceVideo, VideoModelsFileError, type VideoModelRegistry } from "../../src/providers/video/index.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./fake-openai-videos.js";

let dir: string;
let upstream: FakeOpenAiVideos;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchboard-video-models-"));
  upstream = await startFakeOpenAiVideos("sk-from-env");
});

afterAll(async () => {
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
});

async function modelsFile(content: unknown): Promise<string> {
  const path = join(dir, `models-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

async function withRegistry(registry: Promise<VideoModelRegistry>, use: (registry: VideoModelRegistry) => Promise<void> | void): Promise<void> {
  const opened = await registry;
  try {
    await use(opened);
  } finally {
    await opened.close();
  }
}

describe("video model registry", () => {
  it("offers the embedded local/test-pattern without a models file", async () => {
    await withRegistry(loadVideoModels(undefined, { env: {} }), (registry) => {
      expect(registry.list().map((model) => model.id)).toEqual(["local/test-pattern"]);
      const model = registry.get("local/test-pattern");
      expect(model).toMatchObject({
        providerSlug: "local",
        capabilities: { promptOptional: false, upscaling: false, generateAudio: false, seed: true, maxDurationSeconds: 20, defaultDurationSeconds: 5, defaultSize: "1280x720" },
        pricing: { perVideo: 0, perSecond: 0.01, perSecondBySize: {}, perSecondAudio: 0 },
      });
      expect(model?.provider.slug).toBe("local");
      expect(registry.get("openai/sora-2")).toBeUndefined();
    });
  });

  it("reads upstream and extra local models, shares the file with other sections, and binds working providers", async () => {
    const path = await modelsFile({
      speech: [{ id: "ignored/by-video" }],
      video: [
        {
          id: "openai/sora-2",
          provider: "openai-videos",
          base_url: `${upstream.baseUrl}/`,
          api_key_env: "VIDEO_KEY",
          upstream_model: "sora-2",
          forward: ["seed"],
          capabilities: { generate_audio: true, durations: [4, 8, 12], sizes: ["1280x720", "720x1280"] },
          pricing: { per_second: 0.1, per_second_by_size: { "720x1280": 0.12 }, per_second_audio: 0.02 },
        },
        { id: "proxy-sora", provider: "openai-videos", slug: "my-proxy", base_url: "https://videos.example/v1", api_key: "sk-inline", upstream_model: "sora-2-pro", pricing: { per_video: 1 } },
        { id: "local/upscaler", provider: "local", capabilities: { prompt_optional: true, upscaling: true, audio_references: true, video_references: true } },
      ],
    });
    await withRegistry(loadVideoModels(path, { env: { VIDEO_KEY: "sk-from-env" } }), async (registry) => {
      expect(registry.list().map((model) => model.id)).toEqual(["local/test-pattern", "openai/sora-2", "proxy-sora", "local/upscaler"]);
      const sora = registry.get("openai/sora-2");
      expect(sora).toMatchObject({
        providerSlug: "openai",
        upstreamModel: "sora-2",
        capabilities: { generateAudio: true, durations: [4, 8, 12], maxDurationSeconds: 12, defaultDurationSeconds: 4, defaultSize: "1280x720", seed: false },
      });
      expect(registry.get("proxy-sora")).toMatchObject({ providerSlug: "my-proxy", upstreamModel: "sora-2-pro" });
      expect(registry.get("local/upscaler")?.capabilities).toMatchObject({ promptOptional: true, upscaling: true, audioReferences: true, videoReferences: true });

      await expect(sora?.provider.submit({ model: "openai/sora-2", prompt: "via registry", seed: 3 })).resolves.toEqual({ providerJobId: expect.any(String) });
      expect(upstream.requests.at(-1)?.headers.authorization).toBe("Bearer sk-from-env");
      expect(upstream.requests.at(-1)?.body).toEqual({ model: "sora-2", prompt: "via registry", seconds: "4", size: "1280x720", seed: 3 });

      const pricing = sora!.pricing;
      expect(priceVideo(pricing, { durationSeconds: 8, size: { width: 1280, height: 720 }, generateAudio: false })).toBe(0.8);
      expect(priceVideo(pricing, { durationSeconds: 8, size: { width: 720, height: 1280 }, generateAudio: true })).toBe(1.12);
      expect(priceVideo(registry.get("proxy-sora")!.pricing, { durationSeconds: 12, generateAudio: false })).toBe(1);
      expect(priceVideo(registry.get("local/test-pattern")!.pricing, { durationSeconds: 3, generateAudio: false })).toBe(0.03);
    });
  });

  it("lets the file replace the embedded model's price and capabilities", async () => {
    const path = await modelsFile({ video: [{ id: "local/test-pattern", provider: "local", capabilities: { prompt_optional: true }, pricing: { per_second: 0 } }] });
    await withRegistry(loadVideoModels(path, { env: {} }), (registry) => {
      expect(registry.list()).toHaveLength(1);
      expect(registry.get("local/test-pattern")).toMatchObject({ capabilities: { promptOptional: true, defaultDurationSeconds: 5 }, pricing: { perSecond: 0 } });
    });
  });

  it.each([
    ["not JSON", "{video:", /Cannot read the video models file/],
    ["a missing file", undefined, /Cannot read the video models file/],
    ["an unknown provider kind", { video: [{ id: "x/y", provider: "runway" }] }, /video\.0\.provider/],
    ["a typo in an entry", { video: [{ id: "local/a", provider: "local", capabilites: {} }] }, /capabilites/],
    ["an upstream without pricing", { video: [{ id: "x/y", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m" }] }, /video\.0\.pricing/],
    ["both api_key and api_key_env", { video: [{ id: "x/y", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m", pricing: {}, api_key: "k", api_key_env: "K" }] }, /api_key or api_key_env/],
    ["an unset key variable", { video: [{ id: "x/y", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m", pricing: {}, api_key_env: "UNSET_KEY" }] }, /UNSET_KEY is not set/],
    ["a duplicate id", { video: [{ id: "local/a", provider: "local" }, { id: "local/a", provider: "local" }] }, /duplicate model id local\/a/],
    ["the embedded id on an upstream", { video: [{ id: "local/test-pattern", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m", pricing: {} }] }, /must use the local provider/],
    ["a default duration outside durations", { video: [{ id: "local/a", provider: "local", capabilities: { durations: [4, 8], default_duration_seconds: 5 } }] }, /default_duration_seconds is not in durations/],
    ["a bad size", { video: [{ id: "local/a", provider: "local", capabilities: { sizes: ["1280*720"] } }] }, /must be WIDTHxHEIGHT/],
    ["a negative price", { video: [{ id: "local/a", provider: "local", pricing: { per_second: -1 } }] }, /video\.0\.pricing\.per_second/],
    ["an id without a slug", { video: [{ id: "Sora", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m", pricing: {} }] }, /video\.0\.slug/],
    ["an unknown forwarded member", { video: [{ id: "x/y", provider: "openai-videos", base_url: "https://u.example/v1", upstream_model: "m", pricing: {}, forward: ["user"] }] }, /video\.0\.forward\.0/],
  ])("refuses %s", async (_, content, message) => {
    const path = content === undefined ? join(dir, "absent.json") : await modelsFile(content);
    const loading = loadVideoModels(path, { env: {} });
    await expect(loading).rejects.toBeInstanceOf(VideoModelsFileError);
    await expect(loading).rejects.toThrow(message);
  });
});
