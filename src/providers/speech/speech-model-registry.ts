import { createEspeakEngine, type EspeakEngineOptions } from "./espeak-engine.js";
import type { SpeechModelConfig } from "./load-speech-models.js";
import { createOpenAiCompatibleEngine } from "./openai-compatible-engine.js";
import type { SpeechEngine } from "./speech-engine.js";
import { SpeechProviderError } from "./speech-provider-error.js";

/** A model callers can name: the engine that speaks it and what it costs. */
export interface SpeechModel {
  readonly id: string;
  readonly engine: SpeechEngine;
  /** USD per 1000 input characters (Unicode code points); 0 for the embedded engine. */
  readonly pricePer1kChars: number;
  readonly supportsCloning: boolean;
}

/** The models SpeechService offers, built once at startup from the models file. */
export interface SpeechModelRegistry {
  /** Throws a `bad_request` SpeechProviderError listing the available ids when `modelId` is unknown. */
  resolve(modelId: string): SpeechModel;
  readonly models: readonly SpeechModel[];
  /** Closes every engine: eSpeak workers terminate, upstream requests abort. */
  close(): Promise<void>;
  /**
   * Settles once every engine has finished warming up, whether it succeeded
   * or not (a failed engine refuses its own requests; the others still serve).
   */
  warmedUp(): Promise<void>;
}

/** Options for {@link createSpeechModelRegistry}. */
export interface SpeechModelRegistryOptions {
  readonly espeak?: EspeakEngineOptions;
  /** Used by upstream engines; defaults to the global fetch. */
  readonly fetch?: typeof fetch;
}

/**
 * Creates an engine for each configured model, so the core turns a request's
 * `model` into an engine and a price in one call. The embedded engine's
 * workers start warming up now.
 */
export function createSpeechModelRegistry(
  configs: readonly SpeechModelConfig[],
  options: SpeechModelRegistryOptions = {},
): SpeechModelRegistry {
  const models = configs.map((config): SpeechModel => {
    const engine =
      config.provider === "espeak-ng"
        ? createEspeakEngine(options.espeak)
        : createOpenAiCompatibleEngine({ ...config, ...(options.fetch ? { fetch: options.fetch } : {}) });
    return { id: config.id, engine, pricePer1kChars: config.pricePer1kChars, supportsCloning: config.supportsCloning };
  });
  const byId = new Map(models.map((model) => [model.id, model]));

  return {
    models,
    resolve(modelId) {
      const model = byId.get(modelId);
      if (model === undefined) {
        throw new SpeechProviderError(
          "bad_request",
          `Unknown speech model '${modelId}'. Available models: ${models.map((m) => m.id).join(", ")}.`,
        );
      }
      return model;
    },
    async close() {
      await Promise.all(models.map((model) => model.engine.close()));
    },
    async warmedUp() {
      await Promise.allSettled(models.map((model) => model.engine.ready?.()));
    },
  };
}

/** What synthesizing `input` costs on `model`, in USD, so the core checks and charges one figure. */
export function speechCost(model: Pick<SpeechModel, "pricePer1kChars">, input: string): number {
  let characters = 0;
  for (const _ of input) characters++;
  return (characters / 1000) * model.pricePer1kChars;
}
