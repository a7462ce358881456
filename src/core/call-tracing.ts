import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { describeError } from "./error-catalogue.js";
import { onCallEnd, readerLeft } from "./on-call-end.js";

const propagator = new W3CTraceContextPropagator();
const headerGetter = { keys: (headers: Headers) => [...headers.keys()], get: (headers: Headers, key: string) => headers.get(key) ?? undefined };

// Spans are parented explicitly (the call's span travels in its context
// values) rather than through a global context manager: that would need
// AsyncLocalStorage, whose promise hooks make every promise dearer on Node 20,
// and would let test servers in one process see each other's spans.
const callSpanKey = createContextKey<Span | undefined>(undefined, { description: "the span of the call served" });

/** Options for {@link createTracingInterceptor}. */
export interface TracingInterceptorOptions {
  /** False when `tracer` is the no-op one: a call without a `traceparent` then gets no span at all. */
  recording: boolean;
}

/**
 * Traces every call the core serves, over any listener or the bridge: a
 * SERVER span named `<service>/<method>`, joining the caller's trace when the
 * request carries a W3C `traceparent`, ended with the stream's last message,
 * marked as an error with the catalogue reason when the call failed. With
 * tracing off, only a call carrying a `traceparent` gets a (non-recording)
 * span, so its trace context still reaches an intern host (the rest cost
 * ~5% of a member listing's CPU in a profile, for spans nobody records).
 */
export function createTracingInterceptor(tracer: Tracer, options: TracingInterceptorOptions): Interceptor {
  return (next) => async (req) => {
    if (!options.recording && !req.header.has("traceparent")) return next(req);
    const span = tracer.startSpan(
      `${req.service.typeName}/${req.method.name}`,
      { kind: SpanKind.SERVER, attributes: { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name } },
      propagator.extract(ROOT_CONTEXT, req.header, headerGetter),
    );
    req.contextValues.set(callSpanKey, span);
    return onCallEnd(next, req, (outcome) => {
      if (outcome === readerLeft) span.setAttribute("switchboard.reason", "client_closed_request");
      endSpan(span, outcome === readerLeft ? undefined : outcome);
    });
  };
}

/** The span of the call `context` serves (a non-recording one when tracing is off). */
export function callSpanOf(context: HandlerContext): Span | undefined {
  return context.values.get(callSpanKey);
}

/** Starts a span under `parent` (a span, or a context such as a stored `traceparent`'s). */
export function startChildSpan(tracer: Tracer, parent: Span | Context | undefined, name: string, kind: SpanKind, attributes?: Attributes): Span {
  const context = parent === undefined ? ROOT_CONTEXT : "spanContext" in parent ? trace.setSpan(ROOT_CONTEXT, parent) : parent;
  return tracer.startSpan(name, { kind, attributes }, context);
}

/** Writes `span`'s W3C `traceparent` (and `tracestate`) into `headers`, to carry the trace to an intern host. */
export function injectTraceContext(span: Span, headers: Record<string, string>): void {
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, { set: (carrier, key, value) => (carrier[key] = value) });
}

/** `span`'s W3C `traceparent`, to store with work that runs later (a queued video job); absent when not sampled. */
export function traceparentOf(span: Span): string | undefined {
  const headers: Record<string, string> = {};
  injectTraceContext(span, headers);
  return headers.traceparent;
}

/** The context a stored `traceparent` names, to parent later work under the span that queued it. */
export function contextOfTraceparent(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, new Headers({ traceparent }), headerGetter);
}

/** Ends `span`, marked as an error with `error`'s catalogue reason when there is one. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    const described = describeError(error);
    span.setAttributes({ "switchboard.reason": described.reason, "http.response.status_code": described.status });
    span.setStatus({ code: SpanStatusCode.ERROR, message: described.message });
  }
  span.end();
}
