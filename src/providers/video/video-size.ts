/** The `aspect_ratio` values the spec allows. */
export const videoAspectRatios = ["16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9", "9:21"] as const;

/** The `resolution` values the spec allows. */
export const videoResolutions = ["480p", "720p", "768p", "1080p", "1K", "2K", "4K"] as const;

/** One of {@link videoAspectRatios}. */
export type VideoAspectRatio = (typeof videoAspectRatios)[number];

/** One of {@link videoResolutions}. */
export type VideoResolution = (typeof videoResolutions)[number];

/** Pixel dimensions of a video. */
export interface VideoSize {
  width: number;
  height: number;
}

/** The size members of a request, under their wire names. */
export interface VideoSizeInput {
  size?: string;
  resolution?: string;
  aspect_ratio?: string;
}

/**
 * Result of {@link resolveVideoSize}: `size` is undefined when the request
 * names no size at all, so the model's default applies.
 */
export type VideoSizeResult = { ok: true; size: VideoSize | undefined } | { ok: false; error: string };

/** Largest side accepted in `size`; beyond it no provider renders and the arithmetic stops being interesting. */
const maxSide = 16384;

/** How far `size` may stray from `aspect_ratio` (relative), to absorb rounding to even pixels. */
const aspectTolerance = 0.01;

const defaultAspectRatio: VideoAspectRatio = "16:9";
const defaultResolution: VideoResolution = "720p";

/**
 * How a resolution fixes a side: `<N>p` names the short side (720p at 16:9 is
 * 1280x720, at 9:16 720x1280); `<n>K` names the long side as n×1024 px, the
 * convention of image APIs (1K at 1:1 is 1024x1024, 4K at 16:9 is 4096x2304).
 */
const resolutionSides: Record<VideoResolution, { side: "short" | "long"; pixels: number }> = {
  "480p": { side: "short", pixels: 480 },
  "720p": { side: "short", pixels: 720 },
  "768p": { side: "short", pixels: 768 },
  "1080p": { side: "short", pixels: 1080 },
  "1K": { side: "long", pixels: 1024 },
  "2K": { side: "long", pixels: 2048 },
  "4K": { side: "long", pixels: 4096 },
};

function isAspectRatio(value: string): value is VideoAspectRatio {
  return (videoAspectRatios as readonly string[]).includes(value);
}

function isResolution(value: string): value is VideoResolution {
  return (videoResolutions as readonly string[]).includes(value);
}

function ratioOf(aspect: VideoAspectRatio): number {
  const [across, down] = aspect.split(":").map(Number);
  return across / down;
}

function roundEven(value: number): number {
  return 2 * Math.round(value / 2);
}

/** Parses `WIDTHxHEIGHT`; undefined when malformed or out of range. */
export function parseVideoSize(size: string): VideoSize | undefined {
  const match = /^([1-9]\d{0,4})x([1-9]\d{0,4})$/.exec(size);
  if (!match) return undefined;
  const width = Number(match[1]);
  const height = Number(match[2]);
  if (width > maxSide || height > maxSide) return undefined;
  return { width, height };
}

/** Formats a size as `WIDTHxHEIGHT`, the form upstreams and the models file use. */
export function formatVideoSize(size: VideoSize): string {
  return `${size.width}x${size.height}`;
}

function sizeFor(resolution: VideoResolution, aspect: VideoAspectRatio): VideoSize {
  const { side, pixels } = resolutionSides[resolution];
  const ratio = ratioOf(aspect);
  const landscape = ratio >= 1;
  if (side === "short") {
    return landscape ? { width: roundEven(pixels * ratio), height: pixels } : { width: pixels, height: roundEven(pixels / ratio) };
  }
  return landscape ? { width: pixels, height: roundEven(pixels / ratio) } : { width: roundEven(pixels * ratio), height: pixels };
}

function matchesResolution(size: VideoSize, resolution: VideoResolution): boolean {
  const { side, pixels } = resolutionSides[resolution];
  const measured = side === "short" ? Math.min(size.width, size.height) : Math.max(size.width, size.height);
  return measured === pixels;
}

function matchesAspect(size: VideoSize, aspect: VideoAspectRatio): boolean {
  const expected = ratioOf(aspect);
  return Math.abs(size.width / size.height - expected) / expected <= aspectTolerance;
}

/**
 * Turns `size`, or `resolution` plus `aspect_ratio`, into pixel dimensions,
 * because the spec makes them interchangeable and the core must refuse a
 * request where they disagree. A lone `resolution` assumes 16:9, a lone
 * `aspect_ratio` assumes 720p. Pure: safe for validation at submit time.
 */
export function resolveVideoSize(input: VideoSizeInput): VideoSizeResult {
  const { size, resolution, aspect_ratio: aspect } = input;
  if (aspect !== undefined && !isAspectRatio(aspect)) {
    return { ok: false, error: `aspect_ratio must be one of ${videoAspectRatios.join(", ")}.` };
  }
  if (resolution !== undefined && !isResolution(resolution)) {
    return { ok: false, error: `resolution must be one of ${videoResolutions.join(", ")}.` };
  }
  if (size === undefined) {
    if (resolution === undefined && aspect === undefined) return { ok: true, size: undefined };
    return { ok: true, size: sizeFor(resolution ?? defaultResolution, aspect ?? defaultAspectRatio) };
  }
  const parsed = parseVideoSize(size);
  if (!parsed) {
    return { ok: false, error: `size must be WIDTHxHEIGHT with sides from 1 to ${maxSide} pixels.` };
  }
  if (aspect !== undefined && !matchesAspect(parsed, aspect)) {
    return { ok: false, error: `size ${size} conflicts with aspect_ratio ${aspect}.` };
  }
  if (resolution !== undefined && !matchesResolution(parsed, resolution)) {
    return { ok: false, error: `size ${size} conflicts with resolution ${resolution}.` };
  }
  return { ok: true, size: parsed };
}
