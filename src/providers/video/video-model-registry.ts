import { readFile } from "node:fs/promises";
import { createOpenAiVideosProvider } from "./openai-videos-provider.js";
import { createTestPatternProvider, localProviderSlug } from "./test-pattern-provider.js";
import { createTestPatternRenderer, type TestPatternRenderer } from "./test-pattern-renderer.js";
import type { VideoModel } from "./video-model.js";
import { parseVideoModelsFile, testPatternModelId, VideoModelsFileError, type VideoModelConfig, type VideoModelsFile } from "./video-models-file.js";
import type { VideoProvider } from "./video-provider.js";

/** The video models the gateway offers, each bound to a ready provider. */
export interface VideoModelRegistry {
  /** The model with this public id, or undefined (the core refuses the request). */
  get(modelId: string): VideoModel | undefined;
  list(): readonly VideoModel[];
  /** Closes every provider: renders are aborted, cached results dropped. */
  close(): Promise<void>;
}

/** Options for {@link loadVideoModels} and {@link createVideoModelRegistry}. */
export interface VideoModelRegistryOptions {
  /** Where `api_key_env` names are looked up. Default: `process.env`, read once here. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Concurrent test pattern renders. Default: half the cores, 1 to 4. */
  maxConcurrentRenders?: number;
}

/** Size used by local models that declare no default_size. */
const localDefaultSize = "1280x720";

/**
 * The embedded model as a models-file entry. It asks for a prompt like a
 * generation model, so validation can be exercised offline, and costs a
 * nominal $0.01 a second so credit checks and charges are too; an entry with
 * the same id in the models file replaces it.
 */
const embeddedTestPattern = {
  id: testPatternModelId,
  provider: localProviderSlug,
  capabilities: { seed: true, max_duration_seconds: 20, default_duration_seconds: 5, default_size: localDefaultSize },
  pricing: { per_second: 0.01 },
};

/** The file's models, after the embedded one unless the file replaces it. */
function withEmbeddedModel(file: VideoModelsFile): VideoModelsFile {
  if (file.models.some((model) => model.id === testPatternModelId)) return file;
  return { models: [...parseVideoModelsFile({ video: [embeddedTestPattern] }, {}).models, ...file.models] };
}

function providerFor(config: VideoModelConfig, renderer: TestPatternRenderer): VideoProvider {
  const { upstream } = config;
  if (!upstream) {
    return createTestPatternProvider({
      renderer,
      defaults: { durationSeconds: config.capabilities.defaultDurationSeconds, size: config.capabilities.defaultSize ?? localDefaultSize },
    });
  }
  return createOpenAiVideosProvider({ slug: config.slug, capabilities: config.capabilities, ...upstream });
}

/**
 * Builds the registry from a normalised models file, adding the embedded
 * model unless the file replaces it: one provider per model, local models
 * sharing one renderer (and its concurrency limit).
 */
export function createVideoModelRegistry(file: VideoModelsFile, options: VideoModelRegistryOptions = {}): VideoModelRegistry {
  const renderer = createTestPatternRenderer({ maxConcurrent: options.maxConcurrentRenders });
  const models = new Map<string, VideoModel>(
    withEmbeddedModel(file).models.map((config) => [
      config.id,
      {
        id: config.id,
        providerSlug: config.slug,
        upstreamModel: config.upstream?.upstreamModel ?? "test-pattern",
        capabilities: config.capabilities,
        pricing: config.pricing,
        provider: providerFor(config, renderer),
      },
    ]),
  );
  return {
    get: (modelId) => models.get(modelId),
    list: () => [...models.values()],
    async close() {
      await Promise.all([...models.values()].map((model) => model.provider.close()));
      await renderer.close();
    },
  };
}

/**
 * Reads the `video` section of the operator's models file (shape in
 * `video-models-file.ts`) and returns the registry, always with the embedded
 * `local/test-pattern`. Without a path only the embedded model is offered.
 * Throws {@link VideoModelsFileError} on a missing, unreadable or invalid file.
 */
export async function loadVideoModels(path?: string, options: VideoModelRegistryOptions = {}): Promise<VideoModelRegistry> {
  let json: unknown = {};
  if (path !== undefined) {
    try {
      json = JSON.parse(await readFile(path, "utf8"));
    } catch (error) {
      throw new VideoModelsFileError(`Cannot read the video models file ${path}: ${(error as Error).message}`, { cause: error });
    }
  }
  return createVideoModelRegistry(parseVideoModelsFile(json, options.env ?? process.env), options);
}
