export type {
  VideoFrameImage,
  VideoGenerationRequest,
  VideoInputReference,
  VideoOutput,
  VideoPollResult,
  VideoProvider,
  VideoProviderJobStatus,
  VideoSubmission,
  VideoSubmitOptions,
} from "./video-provider.js";
export { VideoProviderError, type VideoProviderErrorKind, type VideoProviderErrorOptions } from "./video-provider-error.js";
export type { VideoModel, VideoModelCapabilities, VideoPricing } from "./video-model.js";
export { priceVideo, type VideoPriceInput } from "./video-price.js";
export {
  formatVideoSize,
  parseVideoSize,
  resolveVideoSize,
  videoAspectRatios,
  videoResolutions,
  type VideoAspectRatio,
  type VideoResolution,
  type VideoSize,
  type VideoSizeInput,
  type VideoSizeResult,
} from "./video-size.js";
export {
  forwardableMembers,
  parseVideoModelsFile,
  testPatternModelId,
  VideoModelsFileError,
  type ForwardableMember,
  type UpstreamVideoConfig,
  type VideoModelConfig,
  type VideoModelsFile,
} from "./video-models-file.js";
export { createVideoModelRegistry, loadVideoModels, type VideoModelRegistry, type VideoModelRegistryOptions } from "./video-model-registry.js";
export { createOpenAiVideosProvider, type OpenAiVideosProviderOptions } from "./openai-videos-provider.js";
export { createTestPatternProvider, localProviderSlug, type TestPatternProviderOptions } from "./test-pattern-provider.js";
export { createTestPatternRenderer, type TestPatternRenderer, type TestPatternRendererOptions } from "./test-pattern-renderer.js";
export { defaultTestPatternLimits, planTestPattern, type TestPatternLimits, type TestPatternPlan } from "./test-pattern-plan.js";
export { runVideoJob, type RunVideoJobOptions, type StoredVideoOutput, type VideoJobResult } from "./run-video-job.js";
export { videoOutputDirectory, videoOutputPath } from "./video-output-path.js";
