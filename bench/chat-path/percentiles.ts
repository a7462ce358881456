/** Percentiles of a set of samples, in the samples' unit, rounded to microseconds when the unit is milliseconds. */
export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of `values` (milliseconds). */
export function percentilesOf(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction: number) => roundMs(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? NaN);
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: roundMs(sorted[sorted.length - 1] ?? NaN) };
}

/** Milliseconds rounded to the microsecond. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** Nanoseconds (hrtime) as milliseconds. */
export function nsToMs(ns: bigint): number {
  return Number(ns) / 1e6;
}
