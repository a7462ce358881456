/** A streaming sample-rate converter: feed blocks in, get blocks out, then flush the tail. */
export interface PcmResampler {
  /** Converts one block; output lags input by the filter's half width until {@link flush}. */
  process(samples: Float32Array): Float32Array;
  /** Emits the remaining output, so the total is ceil(inputLength × outputRate / inputRate). */
  flush(): Float32Array;
}

/** Options for {@link createPcmResampler}. */
export interface PcmResamplerOptions {
  /** Filter taps on each side of the output instant; more is cleaner and slower. */
  readonly halfWidth?: number;
}

/** Fraction of the lower Nyquist frequency kept, leaving the filter room to roll off. */
const passband = 0.92;

/**
 * Creates a polyphase windowed-sinc resampler. eSpeak NG speaks at 22050 Hz
 * and clients expect 24000 Hz; linear interpolation would leave audible
 * imaging above 11 kHz, while a 32-tap filter per phase costs about 1 ms per
 * second of audio. Arithmetic is in float64: V8 runs the loop faster than
 * with float32 arrays, which need a conversion on every load.
 */
export function createPcmResampler(inputRate: number, outputRate: number, options: PcmResamplerOptions = {}): PcmResampler {
  const halfWidth = options.halfWidth ?? 16;
  const divisor = greatestCommonDivisor(inputRate, outputRate);
  const phases = outputRate / divisor;
  const step = inputRate / divisor;
  const filters = designFilters(phases, halfWidth, 0.5 * passband * Math.min(1, outputRate / inputRate));

  const taps = 2 * halfWidth;
  // Input samples from absolute index `bufferStart`; starts with halfWidth-1 zeros so the
  // first output has history to convolve with.
  let buffer = new Float64Array(halfWidth - 1);
  let bufferStart = -(halfWidth - 1);
  let received = 0;
  let nextOutput = 0;

  /** Computes `count` outputs; the caller guarantees the buffer holds every input they touch. */
  function render(count: number): Float32Array {
    const out = new Float32Array(Math.max(0, count));
    // Hoisted into locals: the inner loop is the whole cost of resampling.
    const input = buffer;
    const coefficients = filters;
    const width = taps;
    const position = nextOutput * step;
    let phase = position % phases;
    let base = (position - phase) / phases - halfWidth + 1 - bufferStart;
    for (let n = 0; n < out.length; n++) {
      const offset = phase * width;
      let sum = 0;
      for (let k = 0; k < width; k++) sum += input[base + k] * coefficients[offset + k];
      out[n] = sum;
      phase += step;
      while (phase >= phases) {
        phase -= phases;
        base++;
      }
    }
    nextOutput += out.length;
    return out;
  }

  function append(samples: Float32Array): void {
    const keepFrom = Math.max(0, Math.floor((nextOutput * step) / phases) - halfWidth + 1 - bufferStart);
    const next = new Float64Array(buffer.length - keepFrom + samples.length);
    next.set(buffer.subarray(keepFrom));
    next.set(samples, buffer.length - keepFrom);
    buffer = next;
    bufferStart += keepFrom;
  }

  return {
    process(samples) {
      append(samples);
      received += samples.length;
      // An output needs input up to floor(position) + halfWidth.
      const lastComplete = Math.floor(((received - halfWidth) * phases - 1) / step);
      return render(lastComplete + 1 - nextOutput);
    },
    flush() {
      // Past the end the signal is silence: the zeros let the last outputs use the same loop.
      append(new Float32Array(halfWidth));
      return render(Math.ceil((received * phases) / step) - nextOutput);
    },
  };
}

/** One Blackman-windowed sinc per phase, each normalised to unity gain at DC, laid out phase after phase. */
function designFilters(phases: number, halfWidth: number, cutoff: number): Float64Array {
  const filters = new Float64Array(phases * 2 * halfWidth);
  for (let phase = 0; phase < phases; phase++) {
    const fraction = phase / phases;
    const taps = filters.subarray(phase * 2 * halfWidth, (phase + 1) * 2 * halfWidth);
    let gain = 0;
    for (let k = 0; k < taps.length; k++) {
      const offset = k - halfWidth + 1 - fraction;
      const x = 2 * cutoff * offset;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w = (offset + halfWidth) / (2 * halfWidth);
      const window = 0.42 - 0.5 * Math.cos(2 * Math.PI * w) + 0.08 * Math.cos(4 * Math.PI * w);
      taps[k] = sinc * window;
      gain += taps[k];
    }
    for (let k = 0; k < taps.length; k++) taps[k] /= gain;
  }
  return filters;
}

function greatestCommonDivisor(a: number, b: number): number {
  return b === 0 ? a : greatestCommonDivisor(b, a % b);
}
