import type { FastifyInstance } from "fastify";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { CreateChatCompletionRequestSchema, InternChatService, type CreateChatCompletionResponse } from "../gen/switchboard/v1/chat_pb.js";
import { catalogueError } from "../core/error-catalogue.js";
import { chatChunkJson } from "./chat-chunk-json.js";
import { coreCallOptions } from "./core-call-options.js";
import { sendError } from "./send-error.js";
import { createSseWriter } from "./sse-writer.js";
import { watchClientDisconnect } from "./client-disconnect.js";

/** Maps the JSON body onto the request message; shape errors are 400s. */
function chatRequestFromJson(body: unknown, internId: string) {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw catalogueError("bad_request", "The request body must be a JSON object.");
  try {
    return fromJson(CreateChatCompletionRequestSchema, { ...(body as JsonObject), intern_id: internId }, { ignoreUnknownFields: true });
  } catch (error) {
    throw catalogueError("bad_request", `Invalid request body: ${(error as Error).message}`);
  }
}

/**
 * POST /interns/{internId}/chat/completions → InternChatService as SSE.
 * Nothing is written until the core's first event or refusal, so refusals
 * are real HTTP errors; after that, everything is a chunk.
 */
export function registerChatRoute(app: FastifyInstance, transport: Transport, onStream?: (open: boolean) => void): void {
  const client = createClient(InternChatService, transport);
  app.post<{ Params: { internId: string } }>("/interns/:internId/chat/completions", async (request, reply) => {
    const disconnect = watchClientDisconnect(reply);
    let events: AsyncIterator<CreateChatCompletionResponse>;
    let first: IteratorResult<CreateChatCompletionResponse>;
    try {
      const message = chatRequestFromJson(request.body, request.params.internId);
      events = client.createChatCompletion(message, { ...coreCallOptions(request), signal: disconnect.signal })[Symbol.asyncIterator]();
      first = await events.next();
    } catch (error) {
      disconnect.release();
      return sendError(reply, error);
    }
    reply.hijack();
    const sse = createSseWriter(reply.raw);
    sse.open({ "x-request-id": request.id });
    onStream?.(true);
    try {
      for (let result = first; !result.done; result = await events.next()) {
        const event = result.value.event;
        if (event.case === "chunk") await sse.data(chatChunkJson(event.value));
        else if (event.case === "keepalive") await sse.comment("keepalive");
      }
      await sse.done();
    } catch (error) {
      // Only a departed caller or a shutdown gets here; the core ends every
      // other failure with an error chunk itself.
      request.log.info({ err: disconnect.signal.aborted ? undefined : error }, "chat stream ended early");
      reply.raw.destroy();
    } finally {
      disconnect.release();
      onStream?.(false);
    }
  });
}
