import { Code, ConnectError, createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { callerKey } from "./caller.js";
import { describeError, isUnexpectedError, withCatalogueDetail } from "./error-catalogue.js";
import { onCallEnd, readerLeft } from "./on-call-end.js";

/** How one core call ended, for metrics and the request log (never a key, a prompt or audio). */
export interface CallRecord {
  /** Fully qualified service name, e.g. `switchboard.v1.OrganizationService`. */
  service: string;
  method: string;
  /** gRPC code name in snake case (`ok`, `not_found`, …), as grpc-go and Prometheus exporters spell it. */
  code: string;
  /** Public HTTP status from the catalogue detail (200 for a success). */
  status: number;
  /** Public reason from the catalogue detail; empty for a success or a bare refusal. */
  reason: string;
  /** The caller's organization, when the call was made with an API key. */
  orgId?: string;
  /** The generation the call produced or read, when its handler named one. */
  generationId?: string;
  /** The client's `x-request-id`, when it sent one. */
  requestId?: string;
  /** Until the response ended (the last message of a stream). */
  seconds: number;
  /** An exception nobody meant to reach a caller (its text is withheld from the caller): for the log. */
  unexpectedError?: unknown;
}

/** What the core calls made while serving one HTTP request say about it, for that request's one log line. */
export type RequestCallNotes = Partial<Pick<CallRecord, "service" | "method" | "reason" | "orgId" | "generationId">>;

/**
 * Carries an HTTP request's notes into the core calls it makes (through the
 * bridge's in-process transport, or Connect on the HTTP listener), so the
 * listener writes that request's one line. Passed explicitly rather than
 * through AsyncLocalStorage, whose promise hooks make every promise in the
 * process about 3× dearer on Node 20.
 */
export const requestCallNotesKey = createContextKey<RequestCallNotes | undefined>(undefined, { description: "the call notes of the HTTP request served" });

/**
 * Receives every call's record; implemented by the composition root (metrics,
 * logs), so the core stays free of prom-client and of where lines are written.
 */
export interface CallObserver {
  /** `requestNotes`: the notes of the HTTP request the call serves; absent for a call on the gRPC listener. */
  callEnded(record: CallRecord, requestNotes: RequestCallNotes | undefined): void;
}

/** What a handler tells the observer about its call. */
interface CallNotes {
  generationId?: string;
  callerLeft?: boolean;
}

const callNotesKey = createContextKey<CallNotes | undefined>(undefined, { description: "call notes for the observer" });

/** Names the generation a handler produced or read, for its call's log line. */
export function noteGenerationId(context: HandlerContext, generationId: string | undefined): void {
  const notes = context.values.get(callNotesKey);
  if (notes && generationId) notes.generationId = generationId;
}

/**
 * Marks a stream that ended quietly because its caller went away (chat promises
 * such a caller no final event), so it is counted as canceled, not as a success.
 */
export function noteCallerLeft(context: HandlerContext): void {
  const notes = context.values.get(callNotesKey);
  if (notes) notes.callerLeft = true;
}

/** A stream its reader stopped reading before the end (the caller went away). */
const callerLeft = new ConnectError("The caller left before the stream ended.", Code.Canceled);

const codeNames = new Map(Object.entries(Code).filter(([, value]) => typeof value === "number").map(([name, value]) => [value as Code, name.replace(/(?<!^)([A-Z])/g, "_$1").toLowerCase()]));

/**
 * Observes every call the core serves, over any listener or the bridge: it
 * runs first in the interceptor chain, so it also sees the auth
 * interceptor's refusals, and a stream counts until its last message. Being
 * outermost, it also gives every error the catalogue's detail on its way out.
 */
export function createCallObserver(observer: CallObserver): Interceptor {
  return (next) => async (req) => {
    const startedAt = performance.now();
    const notes: CallNotes = {};
    req.contextValues.set(callNotesKey, notes);
    const requestId = req.header.get("x-request-id") ?? undefined;
    const end = (error?: unknown) => {
      const described = error === undefined ? undefined : describeError(error);
      const unexpected = error !== undefined && isUnexpectedError(error);
      observer.callEnded({
        service: req.service.typeName,
        method: req.method.name,
        // The code the caller is sent (withCatalogueDetail): an unexpected exception goes out as internal.
        code: error === undefined ? "ok" : unexpected ? "internal" : (codeNames.get(ConnectError.from(error).code) ?? "unknown"),
        status: described?.status ?? 200,
        reason: described?.reason ?? "",
        orgId: req.contextValues.get(callerKey)?.orgId,
        generationId: notes.generationId,
        requestId: requestId && /^[\w.-]{1,64}$/.test(requestId) ? requestId : undefined,
        seconds: (performance.now() - startedAt) / 1000,
        unexpectedError: unexpected ? error : undefined,
      }, req.contextValues.get(requestCallNotesKey));
    };
    return onCallEnd(next, req, (outcome) => end(outcome === readerLeft || (outcome === undefined && notes.callerLeft) ? callerLeft : outcome), withCatalogueDetail);
  };
}
