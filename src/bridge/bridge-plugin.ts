import type { FastifyError, FastifyInstance } from "fastify";
import type { Transport } from "@connectrpc/connect";
import { accessRefusalOf, asBridgeRefusal, refuse } from "./bridge-refusal.js";
import { frameworkError } from "./framework-error.js";
import { noRoute } from "./no-route.js";
import { registerMembersRoute } from "./members-route.js";
import { readOpenApiDocument, registerOpenApiRoute } from "./openapi-route.js";
import { addOpenApiSchemas } from "./openapi-schemas.js";
import { sendError } from "./send-error.js";

/** Options for {@link bridgePlugin}. */
export interface BridgeOptions {
  /** In-process transport to the core; every decision is made there. */
  transport: Transport;
  /** Extra route groups (chat, speech, video) registered on the same bridge. */
  routes?: readonly ((app: FastifyInstance, transport: Transport) => void)[];
}

/**
 * The `/api/v1` JSON and SSE surface: HTTP framing of the core's services
 * and nothing more. Register with `prefix: "/api/v1"`.
 */
export async function bridgePlugin(app: FastifyInstance, options: BridgeOptions): Promise<void> {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const refusal = frameworkError(error, request);
    return refusal ? refuse(request, reply, asBridgeRefusal(refusal)) : sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, noRoute(request)));
  // Speech and video take bodies up to 16 MiB: one that large (or of unknown
  // length) is read only once the core has let the caller in, so a stranger
  // cannot make the server hold 16 MiB per connection. Smaller ones are read
  // first, as the probe costs a core call.
  app.addHook("onRequest", async (request, reply) => {
    const length = Number(request.headers["content-length"] ?? 0);
    if (length <= request.server.initialConfig.bodyLimit! && request.headers["transfer-encoding"] === undefined) return;
    const refusal = await accessRefusalOf(request);
    if (refusal) return sendError(reply, refusal);
  });
  const openApiDocument = readOpenApiDocument();
  addOpenApiSchemas(app, openApiDocument);
  registerMembersRoute(app, options.transport);
  registerOpenApiRoute(app, openApiDocument);
  for (const register of options.routes ?? []) register(app, options.transport);
}
