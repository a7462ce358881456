import type { FastifyRequest } from "fastify";
import type { RequestCallNotes } from "../core/call-observer.js";

const notes = new WeakMap<FastifyRequest, RequestCallNotes>();

/**
 * The notes the core calls of `request` fill in (service, reason,
 * organization, generation), read when the listener writes its one log line.
 */
export function callNotesOf(request: FastifyRequest): RequestCallNotes {
  let requestNotes = notes.get(request);
  if (!requestNotes) notes.set(request, (requestNotes = {}));
  return requestNotes;
}
