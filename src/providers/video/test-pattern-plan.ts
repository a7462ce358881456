import { createHash, randomInt } from "node:crypto";
import type { VideoGenerationRequest } from "./video-provider.js";
import { VideoProviderError } from "./video-provider-error.js";
import { parseVideoSize, resolveVideoSize, type VideoSize } from "./video-size.js";

/**
 * Bounds that keep the embedded renderer cheap whatever the request asks:
 * the frame is scaled down (aspect kept) so its long side is at most
 * `maxLongSide`, and frames come at `fps`. The duration is honoured exactly.
 */
export interface TestPatternLimits {
  maxLongSide: number;
  fps: number;
  /** Hard ceiling independent of the models file, so no request can pin a core for minutes. */
  maxDurationSeconds: number;
}

/** 640 px on the long side at 12 fps: a 5 s clip renders in well under a second. */
export const defaultTestPatternLimits: TestPatternLimits = { maxLongSide: 640, fps: 12, maxDurationSeconds: 60 };

/** Smallest rendered side; the H.264 encoder needs whole macroblocks to work with. */
const minSide = 16;

/** Number of colour bars; also the palette length. */
export const testPatternBarCount = 7;

/**
 * Everything the renderer needs, and nothing of the prompt itself: the plan
 * is embedded in the provider job id, so a render lost to a restart is
 * redone identically, and ids may appear in logs.
 */
export interface TestPatternPlan {
  width: number;
  height: number;
  fps: number;
  frameCount: number;
  /** 32-bit seed of the motion; drawn at random when the request gives none. */
  seed: number;
  /** Bar colours as 0xRRGGBB, derived from the prompt (or the seed without one). */
  palette: number[];
  /** Colour of the moving square, 0xRRGGBB. */
  accent: number;
}

/** Defaults of the model the renderer is bound to. */
export interface TestPatternDefaults {
  durationSeconds: number;
  size: string;
}

/** Hues named in prompts; a prompt mentioning them gets them as its bars. */
const colourWords: Record<string, number> = {
  red: 0, crimson: 348, scarlet: 8, fire: 14, orange: 30, sunset: 22, amber: 45, gold: 50, golden: 50,
  yellow: 58, lime: 90, grass: 110, green: 120, forest: 130, emerald: 140, teal: 175, turquoise: 172,
  cyan: 185, aqua: 182, sky: 200, ocean: 205, sea: 200, blue: 225, navy: 232, indigo: 255, violet: 270,
  purple: 278, lavender: 262, magenta: 300, pink: 330, rose: 340,
};

function hslToRgb(hue: number, saturation: number, lightness: number): number {
  const h = (((hue % 360) + 360) % 360) / 60;
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const x = chroma * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] =
    h < 1 ? [chroma, x, 0] : h < 2 ? [x, chroma, 0] : h < 3 ? [0, chroma, x] : h < 4 ? [0, x, chroma] : h < 5 ? [x, 0, chroma] : [chroma, 0, x];
  const m = lightness - chroma / 2;
  const channel = (value: number) => Math.round((value + m) * 255);
  return (channel(r) << 16) | (channel(g) << 8) | channel(b);
}

function hash32(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}

function paletteHues(prompt: string | undefined, seed: number): number[] {
  const named = [...new Set((prompt?.toLowerCase().match(/[a-z]+/g) ?? []).filter((word) => word in colourWords))].map(
    (word) => colourWords[word],
  );
  if (named.length > 0) return Array.from({ length: testPatternBarCount }, (_, i) => named[i % named.length]);
  const base = (prompt ? hash32(prompt) : seed) % 360;
  return Array.from({ length: testPatternBarCount }, (_, i) => base + (i - 3) * 18);
}

function renderedSize(requested: VideoSize, limits: TestPatternLimits): VideoSize {
  const scale = Math.min(1, limits.maxLongSide / Math.max(requested.width, requested.height));
  const side = (pixels: number) => Math.max(minSide, 2 * Math.round((pixels * scale) / 2));
  return { width: side(requested.width), height: side(requested.height) };
}

function requestedSize(request: VideoGenerationRequest, defaults: TestPatternDefaults): VideoSize {
  const resolved = resolveVideoSize(request);
  if (!resolved.ok) throw new VideoProviderError("invalid_request", resolved.error);
  const size = resolved.size ?? parseVideoSize(defaults.size);
  if (!size) throw new VideoProviderError("invalid_request", `The model's default size ${defaults.size} is not WIDTHxHEIGHT.`);
  return size;
}

/**
 * Decides what the test pattern for a request looks like: the rendered size
 * (requested size scaled into the limits), frame count (duration × fps),
 * seed and colours. Throws `invalid_request` for a request it cannot honour.
 */
export function planTestPattern(
  request: VideoGenerationRequest,
  defaults: TestPatternDefaults,
  limits: TestPatternLimits = defaultTestPatternLimits,
): TestPatternPlan {
  const duration = request.duration ?? defaults.durationSeconds;
  if (!Number.isInteger(duration) || duration < 1 || duration > limits.maxDurationSeconds) {
    throw new VideoProviderError("invalid_request", `duration must be an integer from 1 to ${limits.maxDurationSeconds} seconds.`);
  }
  const seed = request.seed === undefined ? randomInt(2 ** 32) : hash32(`seed:${request.seed}`);
  const hues = paletteHues(request.prompt, seed);
  return {
    ...renderedSize(requestedSize(request, defaults), limits),
    fps: limits.fps,
    frameCount: duration * limits.fps,
    seed,
    palette: hues.map((hue, i) => hslToRgb(hue, 0.8, [0.35, 0.5, 0.65][i % 3])),
    accent: hslToRgb(hues[0] + 180, 0.9, 0.6),
  };
}

/** True when `value` is a plan within `limits`; guards ids decoded from storage. */
export function isTestPatternPlan(value: unknown, limits: TestPatternLimits = defaultTestPatternLimits): value is TestPatternPlan {
  if (typeof value !== "object" || value === null) return false;
  const plan = value as Partial<TestPatternPlan>;
  const isColour = (colour: unknown) => Number.isInteger(colour) && (colour as number) >= 0 && (colour as number) <= 0xffffff;
  const isSide = (side: unknown) => Number.isInteger(side) && (side as number) >= minSide && (side as number) <= limits.maxLongSide;
  return (
    isSide(plan.width) &&
    isSide(plan.height) &&
    plan.fps === limits.fps &&
    Number.isInteger(plan.frameCount) &&
    (plan.frameCount as number) >= 1 &&
    (plan.frameCount as number) <= limits.fps * limits.maxDurationSeconds &&
    Number.isInteger(plan.seed) &&
    (plan.seed as number) >= 0 &&
    (plan.seed as number) < 2 ** 32 &&
    Array.isArray(plan.palette) &&
    plan.palette.length === testPatternBarCount &&
    plan.palette.every(isColour) &&
    isColour(plan.accent)
  );
}
