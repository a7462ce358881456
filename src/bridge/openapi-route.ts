import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

/** Where the committed OpenAPI document lives: beside this file, a contract like `proto/`. */
export const openApiDocumentUrl = new URL("./openapi.json", import.meta.url);

/**
 * GET /openapi.json: the OpenAPI 3.1 description of `/api/v1`, served as
 * committed so any team can generate a client from it. It needs no key (it
 * holds no data), and it changes only with a deployment, so caches may keep it.
 */
export function registerOpenApiRoute(app: FastifyInstance): void {
  // Read once: the bytes are served as they are, not re-serialized per request.
  const document = readFileSync(openApiDocumentUrl);
  app.get("/openapi.json", async (_request, reply) =>
    reply.type("application/json; charset=utf-8").header("cache-control", "public, max-age=300").send(document),
  );
}
