import type { VideoPricing } from "./video-model.js";
import { formatVideoSize, type VideoSize } from "./video-size.js";

/** What a job is charged for. */
export interface VideoPriceInput {
  durationSeconds: number;
  /** Resolved output size; selects a size-specific rate when the model has one. */
  size?: VideoSize;
  generateAudio: boolean;
}

/**
 * The cost in USD of one job, computed before submission (to check credits)
 * and charged on completion. Rounded to micro-dollars so sums of charges do
 * not drift with binary fractions.
 */
export function priceVideo(pricing: VideoPricing, input: VideoPriceInput): number {
  const sizeRate = input.size ? pricing.perSecondBySize[formatVideoSize(input.size)] : undefined;
  const perSecond = (sizeRate ?? pricing.perSecond) + (input.generateAudio ? pricing.perSecondAudio : 0);
  return Math.round((pricing.perVideo + perSecond * input.durationSeconds) * 1e6) / 1e6;
}
