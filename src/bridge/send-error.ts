import type { FastifyReply } from "fastify";
import { describeError } from "../core/error-catalogue.js";
import { errorEnvelope, retryHeaders } from "./error-envelope.js";

/** Answers a request with the JSON envelope of any error. */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const described = describeError(error);
  reply.request.log.info({ status: described.status, reason: described.reason || undefined }, "request refused");
  return reply.code(described.status).headers(retryHeaders(described)).type("application/json; charset=utf-8").send(errorEnvelope(described));
}
