import { Counter, Gauge, type Registry } from "prom-client";
import type { InteractionOutcome } from "./run.js";

/** What the host's gauges read on each scrape. */
export interface HostMetricsSource {
  pausedRuns(): number;
  activeRuns(): number;
}

/**
 * The intern host's instruments, registered in the given registry: the
 * standalone host's own (`--metrics-listen`), or the gateway's for the
 * embedded demo host, so either shows them on its /metrics.
 */
export function createHostMetrics(registry: Registry, source: HostMetricsSource) {
  new Gauge({
    name: "switchboard_intern_paused_runs",
    help: "Runs the intern host holds open across a question.",
    registers: [registry],
    collect() {
      this.set(source.pausedRuns());
    },
  });
  new Gauge({
    name: "switchboard_intern_active_runs",
    help: "Runs on the intern host that have not ended, paused ones included.",
    registers: [registry],
    collect() {
      this.set(source.activeRuns());
    },
  });
  const interactions = new Counter({
    name: "switchboard_intern_interactions_total",
    help: "Questions put to callers, by how they ended: answered, expired (deadline), withdrawn (by the agent), closed (the run ended first).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  return {
    interactionEnded: (outcome: InteractionOutcome) => interactions.inc({ outcome }),
  };
}
