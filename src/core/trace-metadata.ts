import { randomBytes } from "node:crypto";
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import type { JsonObject } from "@bufbuild/protobuf";
import { startChildSpan } from "./call-tracing.js";

const traceIdPattern = /^(?!0{32}$)[0-9a-f]{32}$/;
const spanIdPattern = /^(?!0{16}$)[0-9a-f]{16}$/;
const knownKeys = new Set(["trace_id", "trace_name", "span_name", "generation_name", "parent_span_id"]);

/** What a video or speech request says about its observability: never sent to a provider. */
export interface TraceMetadata {
  trace?: JsonObject;
  sessionId?: string;
  user?: string;
}

function attributeValue(value: unknown): string | number | boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : JSON.stringify(value);
}

/**
 * Starts the span of a video or speech operation, under the call's span,
 * shaped by the request's `trace` object: a valid `trace_id` (32 lowercase hex
 * digits) puts it in the caller's trace, under `parent_span_id` when that is a
 * valid 16-hex id (else under a span id made up for the caller's root, since a
 * span cannot be a root with a chosen trace id), linked to the call's span;
 * `span_name` names it; `trace_name` and `generation_name` become
 * `switchboard.trace_name` and `switchboard.generation_name`, every other key
 * `switchboard.trace.<key>`; `session_id` becomes `session.id` and `user`
 * `enduser.id`. Malformed ids are ignored: observability never refuses a request.
 */
export function startTracedOperation(tracer: Tracer, callSpan: Span | undefined, operation: string, metadata: TraceMetadata): Span {
  const fields = metadata.trace ?? {};
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === null || value === undefined) continue;
    if (key === "trace_name" || key === "generation_name") attributes[`switchboard.${key}`] = attributeValue(value);
    else if (!knownKeys.has(key)) attributes[`switchboard.trace.${key}`] = attributeValue(value);
  }
  if (metadata.sessionId) attributes["session.id"] = metadata.sessionId;
  if (metadata.user) attributes["enduser.id"] = metadata.user;
  const name = typeof fields.span_name === "string" && fields.span_name !== "" ? fields.span_name : operation;
  const traceId = typeof fields.trace_id === "string" ? fields.trace_id : "";
  if (!traceIdPattern.test(traceId)) return startChildSpan(tracer, callSpan, name, SpanKind.INTERNAL, attributes);
  const spanId = typeof fields.parent_span_id === "string" && spanIdPattern.test(fields.parent_span_id) ? fields.parent_span_id : randomBytes(8).toString("hex");
  const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
  const links = callSpan ? [{ context: callSpan.spanContext() }] : [];
  return tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, links }, parent);
}
