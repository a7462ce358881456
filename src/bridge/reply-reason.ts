import type { FastifyReply } from "fastify";

const reasons = new WeakMap<FastifyReply, string>();

/** Remembers the public reason a reply was refused with, for the request's log line and metrics. */
export function setReplyReason(reply: FastifyReply, reason: string): void {
  reasons.set(reply, reason);
}

/** The reason {@link setReplyReason} recorded, if the bridge refused the request. */
export function replyReason(reply: FastifyReply): string | undefined {
  return reasons.get(reply);
}
