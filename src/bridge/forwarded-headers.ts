import type { FastifyRequest } from "fastify";

// Only what the core reads; everything else of the HTTP request stays here.
const forwarded = ["authorization", "x-session-id", "traceparent", "tracestate"] as const;

/** The request headers the core needs, plus the request id for its logs. */
export function forwardedHeaders(request: FastifyRequest): Headers {
  const headers = new Headers();
  for (const name of forwarded) {
    const value = request.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  headers.set("x-request-id", request.id);
  return headers;
}
