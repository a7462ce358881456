import { testPatternBarCount, type TestPatternPlan } from "./test-pattern-plan.js";

/** Bits of the frame counter drawn in the top-left corner (4096 frames before it wraps). */
const counterBits = 12;

const black = rgba(0x000000);
const white = rgba(0xffffff);
const grey = rgba(0x404040);

/** Packs 0xRRGGBB as one little-endian RGBA pixel for a Uint32Array view. */
function rgba(rgb: number): number {
  return ((0xff << 24) | ((rgb & 0xff) << 16) | (rgb & 0xff00) | ((rgb >> 16) & 0xff)) >>> 0;
}

/** mulberry32: a tiny seeded generator, so the motion depends on the seed alone. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Motion of the moving square, fixed by the seed. */
interface Motion {
  frequencyX: number;
  frequencyY: number;
  phaseX: number;
  phaseY: number;
  sweepSpeed: number;
}

function motionOf(seed: number): Motion {
  const random = seededRandom(seed);
  return {
    frequencyX: 0.15 + random() * 0.5,
    frequencyY: 0.15 + random() * 0.5,
    phaseX: random() * 2 * Math.PI,
    phaseY: random() * 2 * Math.PI,
    sweepSpeed: 1 + Math.floor(random() * 6),
  };
}

function fillRect(pixels: Uint32Array, width: number, x: number, y: number, w: number, h: number, colour: number): void {
  for (let row = y; row < y + h; row++) pixels.fill(colour, row * width + x, row * width + x + w);
}

/** Repeats one prepared row over rows [from, to). */
function fillRows(pixels: Uint32Array, width: number, row: Uint32Array, from: number, to: number): void {
  for (let y = from; y < to; y++) pixels.set(row, y * width);
}

/**
 * Draws frame `index` of a plan into an RGBA buffer (viewed as Uint32): colour
 * bars from the palette, a scrolling ramp, a square moving on a seeded
 * Lissajous path, a binary frame counter and a progress bar. Pure integer
 * work on whole rows, so frames are cheap and identical on every run.
 */
export function drawTestPatternFrame(plan: TestPatternPlan, index: number, pixels: Uint32Array): void {
  const { width, height } = plan;
  const motion = motionOf(plan.seed);
  const barsBottom = Math.round((height * 2) / 3);
  const footerTop = height - Math.max(2, Math.round(height / 16));

  const bars = new Uint32Array(width);
  for (let bar = 0; bar < testPatternBarCount; bar++) {
    bars.fill(rgba(plan.palette[bar]), Math.floor((bar * width) / testPatternBarCount), Math.floor(((bar + 1) * width) / testPatternBarCount));
  }
  fillRows(pixels, width, bars, 0, barsBottom);

  const ramp = new Uint32Array(width);
  const shift = index * motion.sweepSpeed * 4;
  for (let x = 0; x < width; x++) {
    const level = ((x + shift) * 255 / width) % 256 | 0;
    ramp[x] = rgba((level << 16) | (level << 8) | level);
  }
  fillRows(pixels, width, ramp, barsBottom, footerTop);

  const progress = Math.round(((index + 1) * width) / plan.frameCount);
  fillRect(pixels, width, 0, footerTop, width, height - footerTop, grey);
  fillRect(pixels, width, 0, footerTop, progress, height - footerTop, white);

  const cell = Math.max(1, Math.floor(Math.min(width / (counterBits + 2), Math.min(width, height) / 48)));
  fillRect(pixels, width, 0, 0, cell * (counterBits + 2), cell * 3, grey);
  for (let bit = 0; bit < counterBits; bit++) {
    const on = (index >> (counterBits - 1 - bit)) & 1;
    fillRect(pixels, width, cell * (bit + 1), cell, cell, cell, on ? white : black);
  }

  const seconds = index / plan.fps;
  const side = Math.max(4, Math.round(Math.min(width, height) / 6));
  const x = Math.round((width - side) * (0.5 + 0.5 * Math.sin(2 * Math.PI * motion.frequencyX * seconds + motion.phaseX)));
  const y = Math.round((footerTop - side) * (0.5 + 0.5 * Math.sin(2 * Math.PI * motion.frequencyY * seconds + motion.phaseY)));
  const border = Math.max(1, Math.round(side / 10));
  fillRect(pixels, width, x, y, side, side, black);
  fillRect(pixels, width, x + border, y + border, side - 2 * border, side - 2 * border, rgba(plan.accent));
}
