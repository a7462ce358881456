import type { FastifyRequest } from "fastify";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import { requestCallNotesKey } from "../core/call-observer.js";
import { callNotesOf } from "./request-call-notes.js";

// Only what the core reads; everything else of the HTTP request stays here.
const forwarded = ["authorization", "x-session-id", "traceparent", "tracestate"] as const;

/**
 * The options of a core call made for `request`: the headers the core needs
 * plus the request id for its logs, and the request's call notes, so the
 * call's outcome reaches this request's one log line.
 */
export function coreCallOptions(request: FastifyRequest): { headers: Headers; contextValues: ContextValues } {
  const headers = new Headers();
  for (const name of forwarded) {
    const value = request.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  headers.set("x-request-id", request.id);
  return { headers, contextValues: createContextValues().set(requestCallNotesKey, callNotesOf(request)) };
}
