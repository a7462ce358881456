import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

/** Where the committed OpenAPI document lives: beside this file, a contract like `proto/`. */
export const openApiDocumentUrl = new URL("./openapi.json", import.meta.url);

/** The committed document's bytes: the bridge reads them once at start-up, for its route and its response schemas. */
export const readOpenApiDocument = (): Buffer => readFileSync(openApiDocumentUrl);

/**
 * GET /openapi.json: the OpenAPI 3.1 description of `/api/v1`, served as
 * committed so any team can generate a client from it. It needs no key (it
 * holds no data), and it changes only with a deployment, so caches may keep it.
 * The bytes are served as they are, not re-serialized per request.
 */
export function registerOpenApiRoute(app: FastifyInstance, document: Buffer): void {
  app.get("/openapi.json", async (_request, reply) =>
    reply.type("application/json; charset=utf-8").header("cache-control", "public, max-age=300").send(document),
  );
}
