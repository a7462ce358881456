import { AsyncLocalStorage } from "node:async_hooks";
import type { CallRecord } from "../core/call-observer.js";

/** What the core calls an HTTP request made say about it, for that request's one log line. */
export type HttpCallNotes = Partial<Pick<CallRecord, "service" | "method" | "reason" | "orgId" | "generationId">>;

const storage = new AsyncLocalStorage<HttpCallNotes>();

/**
 * Runs an HTTP request's handler with its notes reachable from the core
 * calls it makes (through the bridge's in-process transport or the Connect
 * plugin), without the bridge or the core knowing about logs.
 */
export function runWithHttpCallNotes(notes: HttpCallNotes, handler: () => void): void {
  storage.run(notes, handler);
}

/** The notes of the HTTP request the current core call serves; undefined on the gRPC listener. */
export function currentHttpCallNotes(): HttpCallNotes | undefined {
  return storage.getStore();
}
