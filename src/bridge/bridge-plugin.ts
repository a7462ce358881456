import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import type { Transport } from "@connectrpc/connect";
import { catalogueError } from "../core/error-catalogue.js";
import { registerMembersRoute } from "./members-route.js";
import { registerOpenApiRoute } from "./openapi-route.js";
import { sendError } from "./send-error.js";

/** Options for {@link bridgePlugin}. */
export interface BridgeOptions {
  /** In-process transport to the core; every decision is made there. */
  transport: Transport;
  /** Extra route groups (chat, speech, video) registered on the same bridge. */
  routes?: readonly ((app: FastifyInstance, transport: Transport) => void)[];
}

/** Fastify errors raised before a handler runs, as catalogue errors. */
function frameworkError(error: FastifyError, request: FastifyRequest) {
  // Routes may raise the limit (speech: cloning references), so the message names the route's own.
  const limit = request.routeOptions.bodyLimit;
  if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") return catalogueError("payload_too_large", `Request body exceeds ${limit / (1024 * 1024)} MiB (${limit} bytes).`);
  if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return catalogueError("bad_request", "Content-Type must be application/json.");
  if (error.code === "FST_ERR_CTP_EMPTY_JSON_BODY") return catalogueError("bad_request", "The request body is empty.");
  if (error instanceof SyntaxError || error.code === "FST_ERR_CTP_INVALID_JSON_BODY") return catalogueError("bad_request", `The request body is not valid JSON: ${error.message}`);
  if (error.statusCode === 400) return catalogueError("bad_request", error.message);
  return error;
}

/**
 * The `/api/v1` JSON and SSE surface: HTTP framing of the core's services
 * and nothing more. Register with `prefix: "/api/v1"`.
 */
export async function bridgePlugin(app: FastifyInstance, options: BridgeOptions): Promise<void> {
  app.setErrorHandler((error: FastifyError, request, reply) => sendError(reply, frameworkError(error, request)));
  app.setNotFoundHandler((request, reply) => sendError(reply, catalogueError("not_found", `No route ${request.method} ${request.url.split("?")[0]}.`)));
  registerMembersRoute(app, options.transport);
  registerOpenApiRoute(app);
  for (const register of options.routes ?? []) register(app, options.transport);
}
