import type { Socket } from "node:net";
import type { FastifyError, FastifyRequest } from "fastify";
import type { ConnectError } from "@connectrpc/connect";
import { catalogueError, describeError } from "../core/error-catalogue.js";
import { errorEnvelope } from "./error-envelope.js";

/** Longest path parameter the router accepts (ids are at most 128 characters, up to 3 bytes each once percent-encoded). */
export const maxPathParamLength = 1024;

/** Fastify errors raised before a handler runs (body parsing, routing), as catalogue errors; undefined for any other error. */
export function frameworkError(error: FastifyError, request: FastifyRequest): ConnectError | undefined {
  // Routes may raise the limit (speech: cloning references), so the message names the route's own.
  const limit = request.routeOptions.bodyLimit;
  if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") return catalogueError("payload_too_large", `Request body exceeds ${limit / (1024 * 1024)} MiB (${limit} bytes).`);
  if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return catalogueError("bad_request", "Content-Type must be application/json.");
  if (error.code === "FST_ERR_CTP_EMPTY_JSON_BODY") return catalogueError("bad_request", "The request body is empty.");
  if (error instanceof SyntaxError || error.code === "FST_ERR_CTP_INVALID_JSON_BODY") return catalogueError("bad_request", `The request body is not valid JSON: ${error.message}`);
  if (error.code === "FST_ERR_BAD_URL") return catalogueError("bad_request", "The URL is not valid: it holds a malformed percent-encoding.");
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") return catalogueError("bad_request", `A path segment is longer than ${maxPathParamLength} characters.`);
  if (error.statusCode === 400) return catalogueError("bad_request", error.message);
  return undefined;
}

/**
 * The raw HTTP/1.1 response to a request Node's parser rejected (no Fastify
 * request exists yet), with the JSON envelope like every other refusal.
 */
function clientErrorResponse(error: Error & { code?: string }): string {
  const refusal =
    error.code === "HPE_HEADER_OVERFLOW"
      ? catalogueError("headers_too_large")
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? catalogueError("request_timeout")
        : catalogueError("bad_request", "The request is not valid HTTP/1.1.");
  const described = describeError(refusal);
  const body = JSON.stringify(errorEnvelope(described));
  return `HTTP/1.1 ${described.status} ${statusText[described.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

const statusText: Record<number, string> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" };

/** Answers `socket` for a parser error (Fastify's `clientErrorHandler`), then closes it. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  if (socket.writable) socket.write(clientErrorResponse(error));
  socket.destroy(error);
}
