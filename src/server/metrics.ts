import { Counter, Histogram, Gauge, Registry, collectDefaultMetrics } from "prom-client";

const latencyBuckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120];

/** What the metrics read on each scrape. */
export interface MetricsSources {
  /** Video jobs waiting and running, across replicas. */
  videoJobs: () => Promise<Record<"pending" | "in_progress", number>>;
}

/**
 * The Prometheus registry served at /metrics and the instruments in it. The
 * defaults include the event-loop delay (`nodejs_eventloop_lag_seconds` and
 * its `_p50`/`_p90`/`_p99` percentiles from `perf_hooks.monitorEventLoopDelay`).
 */
export function createMetrics(sources: MetricsSources) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Histogram({
      name: "switchboard_http_request_duration_seconds",
      help: "HTTP requests by route, method, status and reason.",
      labelNames: ["route", "method", "status", "reason"] as const,
      buckets: latencyBuckets,
      registers: [registry],
    }),
    rpcRequests: new Histogram({
      name: "switchboard_rpc_duration_seconds",
      help: "Core calls (gRPC, Connect and the bridge's) by service, method, gRPC code and reason; a stream until its last message.",
      labelNames: ["service", "method", "code", "reason"] as const,
      buckets: latencyBuckets,
      registers: [registry],
    }),
    openStreams: new Gauge({ name: "switchboard_open_sse_streams", help: "SSE streams open on the bridge.", registers: [registry] }),
    chatTurns: new Counter({
      name: "switchboard_chat_turns_total",
      help: "Chat turns relayed, by finish (stop, tool_calls, error) and the error's reason.",
      labelNames: ["finish", "reason"] as const,
      registers: [registry],
    }),
    speechSyntheses: new Gauge({ name: "switchboard_speech_syntheses", help: "Speech syntheses holding an engine (worker or upstream socket).", registers: [registry] }),
    speechRealTimeFactor: new Histogram({
      name: "switchboard_speech_real_time_factor",
      help: "Seconds of audio per second of wall time, per completed PCM synthesis.",
      labelNames: ["model"] as const,
      buckets: [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500],
      registers: [registry],
    }),
    videoJobs: new Gauge({
      name: "switchboard_video_jobs",
      help: "Unfinished video jobs by status (pending: the queue's depth; in_progress: running), across replicas.",
      labelNames: ["status"] as const,
      registers: [registry],
      async collect() {
        const counts = await sources.videoJobs();
        for (const [status, jobs] of Object.entries(counts)) this.set({ status }, jobs);
      },
    }),
    videoJobDuration: new Histogram({
      name: "switchboard_video_job_duration_seconds",
      help: "Video jobs from submission to their terminal status, by that status.",
      labelNames: ["status"] as const,
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "switchboard_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome.",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
  };
}

/** The server's metrics. */
export type Metrics = ReturnType<typeof createMetrics>;
