import type { FastifyInstance } from "fastify";

/** The `$id` the OpenAPI document's component schemas are shared under. */
const openApiSchemaId = "switchboard-openapi";

/**
 * Shares the component schemas of the committed OpenAPI document with the
 * bridge's routes, so a route's response schema is the documented one, not a
 * second copy of it.
 */
export function addOpenApiSchemas(app: FastifyInstance, document: Buffer): void {
  const { components } = JSON.parse(document.toString("utf8")) as { components: { schemas: Record<string, unknown> } };
  app.addSchema({ $id: openApiSchemaId, components: { schemas: components.schemas } });
}

/**
 * A reference to one of the document's component schemas, for a route's
 * `schema.response`. Fastify then serializes that response with a compiled
 * serializer (fast-json-stringify) instead of `JSON.stringify`, and a body
 * that breaks the documented shape (a required member missing) fails loudly
 * instead of reaching the caller.
 */
export const openApiSchema = (name: string) => ({ $ref: `${openApiSchemaId}#/components/schemas/${name}` });
