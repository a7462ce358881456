/** One figure of one benchmark beside its baseline from the same run: the unit every bench reports in, so one table can hold them all. */
export interface BenchRow {
  bench: string;
  figure: string;
  value: number;
  unit: string;
  /** What the figure is compared with, measured in the same run; "—" only where the issue sets an absolute target. */
  baseline: string;
  baselineValue: number | null;
  /** value ÷ baselineValue, where a ratio is what the target judges. */
  ratio?: number;
  /** value − baselineValue, where an added cost is what the target judges. */
  added?: number;
  target: string;
  /** Null where the issue sets no target and the figure is only reported. */
  met: boolean | null;
}

/** What every bench's `run()` resolves to: its rows, and the free-form figures they were drawn from. */
export interface BenchReport {
  rows: BenchRow[];
  detail: unknown;
}

/** Rounds to `digits` decimals, so rows stay readable in JSON and in the table. */
export function roundTo(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Builds a row that judges value ÷ baseline against a minimum ratio. */
export function ratioRow(row: Omit<BenchRow, "ratio" | "met" | "baselineValue"> & { baselineValue: number; minRatio: number }): BenchRow {
  const { minRatio, ...rest } = row;
  const ratio = roundTo(row.value / row.baselineValue);
  return { ...rest, ratio, met: ratio >= minRatio };
}

/** Builds a row that judges value − baseline against a maximum added cost. */
export function addedRow(row: Omit<BenchRow, "added" | "met" | "baselineValue"> & { baselineValue: number; maxAdded: number | null }): BenchRow {
  const { maxAdded, ...rest } = row;
  const added = roundTo(row.value - row.baselineValue);
  return { ...rest, added, met: maxAdded === null ? null : added <= maxAdded };
}
