import type { VideoProvider } from "./video-provider.js";

/**
 * What a model accepts, so the core can validate a request before charging
 * for it. Set per model in the models file (`video-models-file.ts`).
 */
export interface VideoModelCapabilities {
  /** The model can generate from image input alone, so `prompt` may be omitted. */
  promptOptional: boolean;
  /** An upscaling model: `creativity` and `upscale_factor` are allowed (and only here). */
  upscaling: boolean;
  /** Default of `generate_audio` when the request leaves it out. */
  generateAudio: boolean;
  /** Audio references in `input_references` reach the provider; otherwise they are dropped. */
  audioReferences: boolean;
  /** Video references in `input_references` reach the provider; otherwise they are dropped. */
  videoReferences: boolean;
  /** The provider honours `seed` (same seed and parameters, same video). */
  seed: boolean;
  /** Allowed durations in seconds; undefined when any integer up to the maximum is fine. */
  durations?: readonly number[];
  maxDurationSeconds?: number;
  /** Used for pricing and rendering when the request gives no `duration`. */
  defaultDurationSeconds: number;
  /** Allowed `WIDTHxHEIGHT` values; undefined when any size is fine. */
  sizes?: readonly string[];
  /** Used when the request names no size; undefined lets the provider choose. */
  defaultSize?: string;
}

/**
 * Price of a model in USD. A job costs `perVideo` plus, per second of
 * output, `perSecondBySize[WxH]` (or `perSecond`) and `perSecondAudio` when
 * audio is generated.
 */
export interface VideoPricing {
  perVideo: number;
  perSecond: number;
  perSecondBySize: Readonly<Record<string, number>>;
  perSecondAudio: number;
}

/** A model the gateway offers: its rules, its price and the provider bound to it. */
export interface VideoModel {
  /** Public model id, as in the request's `model`. */
  readonly id: string;
  /** Slug of the provider entry; also the key read in `provider.options`. */
  readonly providerSlug: string;
  /** The model id sent upstream. */
  readonly upstreamModel: string;
  readonly capabilities: VideoModelCapabilities;
  readonly pricing: VideoPricing;
  readonly provider: VideoProvider;
}
