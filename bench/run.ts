import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** One benchmark: a name, its figures, and the targets they are judged by. */
interface BenchEntry {
  name: string;
  module: string;
}

// Each module exports `run()`; a module that is missing is reported, not fatal.
const benches: BenchEntry[] = [
  { name: "members-throughput", module: "./members-throughput.ts" },
  { name: "intern-host-throughput", module: "./intern-host-throughput.ts" },
  { name: "speech-synthesis", module: "./speech-synthesis.ts" },
  { name: "video-queue", module: "./video-queue.ts" },
  { name: "chat-path", module: "./chat-path.ts" },
];

const only = process.argv.slice(2);
const results: Record<string, unknown> = {};
for (const bench of benches) {
  if (only.length && !only.includes(bench.name)) continue;
  process.stderr.write(`running ${bench.name}…\n`);
  try {
    const module = (await import(bench.module)) as { run: () => Promise<unknown> };
    results[bench.name] = await module.run();
  } catch (error) {
    results[bench.name] = { error: (error as Error).message };
  }
  process.stderr.write(`${bench.name}: ${JSON.stringify(results[bench.name])}\n`);
}
const output = { date: new Date().toISOString(), node: process.version, results };
writeFileSync(join(import.meta.dirname, "results.json"), JSON.stringify(output, null, 2) + "\n");
process.stdout.write(JSON.stringify(output, null, 2) + "\n");
