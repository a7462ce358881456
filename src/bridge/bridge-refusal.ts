import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConnectError } from "@connectrpc/connect";
import { catalogueError, describeError } from "../core/error-catalogue.js";
import { sendError } from "./send-error.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The cheapest core call of the route's method, made only to learn
     * whether the core lets this caller in (see {@link refuse}).
     */
    accessProbe?: (request: FastifyRequest) => Promise<unknown>;
  }
}

const madeHere = new WeakSet<object>();

/** A 400 the bridge raises itself: a body or query it cannot map onto the core's request. */
export function bridgeRefusal(message: string): ConnectError {
  const error = catalogueError("bad_request", message);
  madeHere.add(error);
  return error;
}

/** Marks a refusal made before the core saw the request (Fastify's body parser, routing). */
export function asBridgeRefusal(error: ConnectError): ConnectError {
  madeHere.add(error);
  return error;
}

// Refusals the auth interceptor makes: 401, 403, and the programme's bare 404.
function isAccessRefusal(error: unknown): boolean {
  const { status, reason } = describeError(error);
  return status === 401 || status === 403 || (status === 404 && reason === "");
}

/**
 * Answers with `error`, unless the bridge made it before the core saw the
 * request and the core would not let this caller in at all: then the core's
 * refusal wins. So a missing key is a 401 and a caller outside the interns
 * programme a bare 404 whatever its body (the spec: "404 for every path
 * under /interns"), while the rules stay in the core's interceptor.
 */
export async function refuse(request: FastifyRequest, reply: FastifyReply, error: unknown): Promise<FastifyReply> {
  if (typeof error === "object" && error !== null && madeHere.has(error)) {
    const access = await accessRefusalOf(request);
    if (access) return sendError(reply, access);
  }
  return sendError(reply, error);
}

/** The core's 401, 403 or bare programme 404 for this caller on this route, if it has one. */
export async function accessRefusalOf(request: FastifyRequest): Promise<unknown> {
  const probe = request.routeOptions.config.accessProbe;
  if (!probe) return undefined;
  return probe(request).then(
    () => undefined,
    (refusal: unknown) => (isAccessRefusal(refusal) ? refusal : undefined),
  );
}

/** Reads the first event of a server stream, then lets the call go: enough for the core's interceptors to decide. */
export async function firstEventOf(open: (signal: AbortSignal) => AsyncIterable<unknown>): Promise<void> {
  const abort = new AbortController();
  try {
    await open(abort.signal)[Symbol.asyncIterator]().next();
  } finally {
    abort.abort();
  }
}
