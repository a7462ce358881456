import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import type { BenchReport, BenchRow } from "./bench-row.js";
import { renderResultsTable, type RunConditions } from "./results-table.js";

// Each module exports `run(): Promise<BenchReport>`; a bench that fails is reported, not fatal.
const benches: Record<string, string> = {
  "members-throughput": "./members-throughput.ts",
  "intern-host-throughput": "./intern-host-throughput.ts",
  "speech-synthesis": "./speech-synthesis.ts",
  "video-queue": "./video-queue.ts",
  "chat-path": "./chat-path.ts",
  capacity: "./capacity.ts",
  soak: "./soak.ts",
  portkey: "./portkey.ts",
};

const knobNames = ["BENCH_SCALE", "BENCH_SECONDS", "BENCH_PICKUP_SAMPLES", "BENCH_CAPACITY_STREAMS", "SOAK_SECONDS"];
const loads = () => loadavg().map((load) => Math.round(load * 100) / 100);

const only = process.argv.slice(2);
const startLoad = loads();
const rows: BenchRow[] = [];
const details: Record<string, unknown> = {};
const errors: Record<string, string> = {};
for (const [name, module] of Object.entries(benches)) {
  if (only.length && !only.includes(name)) continue;
  process.stderr.write(`running ${name}…\n`);
  try {
    const report = (await (await import(module)).run()) as BenchReport;
    rows.push(...report.rows);
    details[name] = report.detail;
    process.stderr.write(`${name}: ${JSON.stringify(report.rows)}\n`);
  } catch (error) {
    errors[name] = (error as Error).message;
    process.stderr.write(`${name} failed: ${(error as Error).stack}\n`);
  }
}
const conditions: RunConditions = {
  date: new Date().toISOString(),
  node: process.version,
  cores: availableParallelism(),
  loadAverage: { start: startLoad, end: loads() },
  knobs: Object.fromEntries(knobNames.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]!])),
};
writeFileSync(join(import.meta.dirname, "results.json"), JSON.stringify({ ...conditions, rows, errors, details }, null, 2) + "\n");
const table = renderResultsTable(rows, conditions, errors);
writeFileSync(join(import.meta.dirname, "results.md"), table);
process.stdout.write(table);
