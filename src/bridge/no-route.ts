import type { FastifyRequest } from "fastify";
import type { ConnectError } from "@connectrpc/connect";
import { catalogueError } from "../core/error-catalogue.js";

/** The 404 for a path and method the surface does not serve. */
export function noRoute(request: FastifyRequest): ConnectError {
  return catalogueError("not_found", `No route ${request.method} ${request.url.split("?")[0]}.`);
}
