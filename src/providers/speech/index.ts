export type { SpeechEngine, SpeechFormat, SpeechReference, SpeechRequest } from "./speech-engine.js";
export { SpeechProviderError, type SpeechProviderErrorKind, type SpeechProviderErrorOptions } from "./speech-provider-error.js";
export {
  createEspeakEngine,
  espeakModelId,
  espeakSpeedRange,
  type EspeakEngine,
  type EspeakEngineOptions,
} from "./espeak-engine.js";
export { openAiVoices } from "./espeak-voices.js";
export { createOpenAiCompatibleEngine, type OpenAiCompatibleEngineOptions } from "./openai-compatible-engine.js";
export {
  loadSpeechModels,
  type EmbeddedSpeechModelConfig,
  type SpeechModelConfig,
  type UpstreamSpeechModelConfig,
} from "./load-speech-models.js";
export {
  createSpeechModelRegistry,
  speechCost,
  type SpeechModel,
  type SpeechModelRegistry,
  type SpeechModelRegistryOptions,
} from "./speech-model-registry.js";
