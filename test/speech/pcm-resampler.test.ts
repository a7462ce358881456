import { describe, expect, test } from "vitest";
import { createPcmResampler } from "../../src/providers/speech/pcm-resampler.js";

function sine(frequency: number, rate: number, seconds: number, amplitude = 0.5): Float32Array {
  return Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => amplitude * Math.sin((2 * Math.PI * frequency * i) / rate));
}

/** Magnitude of `frequency` in `samples` (a single-bin DFT), scaled so a full-scale sine gives its amplitude. */
function magnitude(samples: Float32Array, frequency: number, rate: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < samples.length; i++) {
    re += samples[i] * Math.cos((2 * Math.PI * frequency * i) / rate);
    im -= samples[i] * Math.sin((2 * Math.PI * frequency * i) / rate);
  }
  return (2 * Math.hypot(re, im)) / samples.length;
}

function resampleInBlocks(input: Float32Array, blockSize: number): Float32Array {
  const resampler = createPcmResampler(22050, 24000);
  const parts: Float32Array[] = [];
  for (let offset = 0; offset < input.length; offset += blockSize) parts.push(resampler.process(input.subarray(offset, offset + blockSize)));
  parts.push(resampler.flush());
  const out = new Float32Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

describe("pcm resampler 22050 → 24000 Hz", () => {
  test("emits ceil(n × 24000 / 22050) samples whatever the block size", () => {
    for (const length of [0, 1, 31, 22050, 22051, 44100 + 7]) {
      const input = sine(440, 22050, length / 22050);
      for (const block of [1, 100, 2205, 100_000]) {
        expect(resampleInBlocks(input, block).length, `${length}/${block}`).toBe(Math.ceil((length * 24000) / 22050));
      }
    }
  });

  test("block boundaries do not change the output", () => {
    const input = sine(1000, 22050, 0.5);
    const whole = resampleInBlocks(input, input.length);
    const pieces = resampleInBlocks(input, 97);
    for (let i = 0; i < whole.length; i++) expect(pieces[i]).toBeCloseTo(whole[i], 5);
  });

  test("keeps a tone's pitch and level, and adds no images", () => {
    const out = resampleInBlocks(sine(1000, 22050, 1), 2205);
    // Skip the filter's start and end transients.
    const steady = out.subarray(1000, out.length - 1000);
    expect(magnitude(steady, 1000, 24000)).toBeCloseTo(0.5, 2);
    // Linear interpolation would leave an image at 22050 − 1000 Hz, folded to 2950 Hz at 24 kHz.
    expect(magnitude(steady, 24000 - 21050, 24000)).toBeLessThan(0.005);
  });
});
