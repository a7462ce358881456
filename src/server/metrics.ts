import { Counter, Histogram, Gauge, Registry, collectDefaultMetrics } from "prom-client";

/** The Prometheus registry served at /metrics and the instruments in it. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Histogram({
      name: "switchboard_http_request_duration_seconds",
      help: "HTTP requests by route, method, status and reason.",
      labelNames: ["route", "method", "status", "reason"] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [registry],
    }),
    openStreams: new Gauge({ name: "switchboard_open_sse_streams", help: "SSE streams open on the bridge.", registers: [registry] }),
    speechSyntheses: new Gauge({ name: "switchboard_speech_syntheses", help: "Speech syntheses holding an engine (worker or upstream socket).", registers: [registry] }),
    rpcErrors: new Counter({
      name: "switchboard_rpc_errors_total",
      help: "Errors returned by the core, by service, method and reason.",
      labelNames: ["service", "method", "reason"] as const,
      registers: [registry],
    }),
  };
}

/** The server's metrics. */
export type Metrics = ReturnType<typeof createMetrics>;
