import type { FastifyReply } from "fastify";
import { describeError } from "../core/error-catalogue.js";
import { errorEnvelope, retryHeaders } from "./error-envelope.js";
import { setReplyReason } from "./reply-reason.js";

/** Answers a request with the JSON envelope of any error. */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const described = describeError(error);
  // The request's one log line (written when the response ends) carries the status and this reason.
  setReplyReason(reply, described.reason);
  return reply.code(described.status).headers(retryHeaders(described)).type("application/json; charset=utf-8").send(errorEnvelope(described));
}
