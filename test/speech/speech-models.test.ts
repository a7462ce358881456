import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { espeakModelId } from "../../src/providers/speech/espeak-engine.js";
import { loadSpeechModels } from "../../src/providers/speech/load-speech-models.js";
import { createSpeechModelRegistry, speechCost } from "../../src/providers/speech/speech-model-registry.js";
import { SpeechProviderError } from "../../src/providers/speech/speech-provider-error.js";
import { fakeApiKey, startFakeOpenAiSpeechServer } from "./fake-openai-speech-server.js";

const directory = mkdtempSync(join(tmpdir(), "speech-models-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let files = 0;
function modelsFile(content: unknown): string {
  const path = join(directory, `models-${files++}.json`);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

const openAi = {
  id: "openai/tts-1",
  provider: "openai-compatible",
  base_url: "https://api.openai.com/v1",
  api_key_env: "OPENAI_API_KEY",
  upstream_model: "tts-1",
  price_per_1k_chars: 0.015,
};

describe("loadSpeechModels", () => {
  test("without a file, only the embedded engine is offered, free", async () => {
    expect(await loadSpeechModels()).toEqual([{ provider: "espeak-ng", id: espeakModelId, pricePer1kChars: 0, supportsCloning: false }]);
  });

  test("reads upstream entries, resolving the API key from the environment", async () => {
    const path = modelsFile({
      speech: [openAi, { ...openAi, id: "clone/voice", supports_cloning: true, timeout_ms: 5000, api_key_env: undefined }],
      video: [{ anything: "other sections are ignored" }],
    });
    const models = await loadSpeechModels(path, { OPENAI_API_KEY: "sk-live" });
    expect(models.map((model) => model.id)).toEqual([espeakModelId, "openai/tts-1", "clone/voice"]);
    expect(models[1]).toEqual({
      provider: "openai-compatible",
      id: "openai/tts-1",
      baseUrl: "https://api.openai.com/v1",
      apiKey: "sk-live",
      upstreamModel: "tts-1",
      pricePer1kChars: 0.015,
      supportsCloning: false,
    });
    expect(models[2]).toMatchObject({ supportsCloning: true, timeoutMs: 5000 });
    expect(models[2]).not.toHaveProperty("apiKey");
  });

  test.each([
    ["not JSON", "{speech: [", /Invalid speech models file .*models-\d+\.json:\n  - .*JSON/],
    ["a missing field", { speech: [{ ...openAi, upstream_model: undefined }] }, /speech\.0\.upstream_model/],
    ["a typo'd field", { speech: [{ ...openAi, price_per_1k_char: 1 }] }, /speech\.0: Unrecognized key/],
    ["a bad URL", { speech: [{ ...openAi, base_url: "ftp://example.com" }] }, /speech\.0\.base_url/],
    ["a negative price", { speech: [{ ...openAi, price_per_1k_chars: -1 }] }, /speech\.0\.price_per_1k_chars/],
    ["an unknown provider", { speech: [{ ...openAi, provider: "elevenlabs" }] }, /speech\.0\.provider/],
    ["a duplicate id", { speech: [openAi, openAi] }, /speech\.1\.id: duplicate model id openai\/tts-1/],
    ["the built-in id", { speech: [{ ...openAi, id: espeakModelId }] }, /local\/espeak-ng is built in/],
    ["an unset key variable", { speech: [{ ...openAi, api_key_env: "NOT_SET_ANYWHERE" }] }, /NOT_SET_ANYWHERE is not set/],
  ])("refuses %s with a clear message", async (_, content, message) => {
    await expect(loadSpeechModels(modelsFile(content), { OPENAI_API_KEY: "sk" })).rejects.toThrow(message);
  });

  test("a missing file names the path", async () => {
    await expect(loadSpeechModels(join(directory, "absent.json"))).rejects.toThrow(/absent\.json.*ENOENT/s);
  });
});

describe("speech model registry", () => {
  test("resolves models to engines and prices; an unknown model is a bad request listing the ids", async () => {
    const server = await startFakeOpenAiSpeechServer();
    const path = modelsFile({ speech: [{ ...openAi, base_url: server.baseUrl, api_key_env: "FAKE_KEY" }] });
    const registry = createSpeechModelRegistry(await loadSpeechModels(path, { FAKE_KEY: fakeApiKey }), { espeak: { size: 1 } });
    try {
      expect(registry.resolve(espeakModelId)).toMatchObject({ pricePer1kChars: 0, supportsCloning: false });
      const upstream = registry.resolve("openai/tts-1");
      expect(upstream.pricePer1kChars).toBe(0.015);
      let bytes = 0;
      for await (const chunk of upstream.engine.synthesize({ input: "Hi.", voice: "alloy", format: "pcm" })) bytes += chunk.length;
      expect(bytes).toBeGreaterThan(0);

      let refusal: unknown;
      try {
        registry.resolve("openai/tts-2");
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(SpeechProviderError);
      expect((refusal as SpeechProviderError).kind).toBe("bad_request");
      expect((refusal as SpeechProviderError).message).toBe(
        "Unknown speech model 'openai/tts-2'. Available models: local/espeak-ng, openai/tts-1.",
      );
    } finally {
      await registry.close();
      await server.close();
    }
  });

  test("warmedUp settles once the embedded engine is warm, so readiness can wait for it", async () => {
    const registry = createSpeechModelRegistry(await loadSpeechModels(), { espeak: { size: 1 } });
    try {
      let settled = false;
      const warming = registry.warmedUp().then(() => (settled = true));
      // Warming runs eSpeak in a worker thread: it cannot be over within this turn of the event loop.
      await Promise.resolve();
      expect(settled).toBe(false);
      await warming;
      // A warm engine answers at once.
      const engine = registry.resolve(espeakModelId).engine;
      let bytes = 0;
      for await (const chunk of engine.synthesize({ input: "Hi.", voice: "en-us", format: "pcm" })) bytes += chunk.length;
      expect(bytes).toBeGreaterThan(0);
    } finally {
      await registry.close();
    }
  });

  test("warmedUp settles even when an engine cannot start: the other models still serve", async () => {
    const registry = createSpeechModelRegistry(await loadSpeechModels(), { espeak: { size: 1 } });
    await registry.close();
    await expect(registry.warmedUp()).resolves.toBeUndefined();
  });

  test("cost is the price per 1000 characters, counting code points", () => {
    expect(speechCost({ pricePer1kChars: 0.015 }, "a".repeat(2000))).toBeCloseTo(0.03, 10);
    expect(speechCost({ pricePer1kChars: 1 }, "😀😀")).toBeCloseTo(0.002, 10);
    expect(speechCost({ pricePer1kChars: 0 }, "free")).toBe(0);
  });
});
