import { trace, type Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import type { TracingConfig } from "./config.js";

/** The tracer the server hands to its parts, and how to flush it at shutdown. */
export interface Tracing {
  tracer: Tracer;
  /** False for the no-op tracer: spans are then only worth making to carry a caller's trace context on. */
  recording: boolean;
  /** Exports what is buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Builds the server's tracer: OTLP over HTTP when `config` is set, or the
 * spans handed to `exporter` (tests), else the API's no-op tracer, which
 * costs nothing. The provider is not registered globally: the tracer is
 * passed down, so two servers in one process keep their spans apart.
 */
export function startTracing(config: TracingConfig | undefined, exporter?: SpanExporter): Tracing {
  if (!config && !exporter) return { tracer: trace.getTracer("switchboard"), recording: false, shutdown: async () => undefined };
  const processor = exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(new OTLPTraceExporter({ url: config!.tracesUrl }));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": config?.serviceName ?? "switchboard" }),
    spanProcessors: [processor],
  });
  return { tracer: provider.getTracer("switchboard"), recording: true, shutdown: () => provider.shutdown() };
}
