import type { FastifyInstance } from "fastify";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { CreateChatCompletionRequestSchema, InternChatService, type CreateChatCompletionResponse } from "../gen/switchboard/v1/chat_pb.js";
import { catalogueError } from "../core/error-catalogue.js";
import { chatChunkJson } from "./chat-chunk-json.js";
import { forwardedHeaders } from "./forwarded-headers.js";
import { sendError } from "./send-error.js";
import { createSseWriter } from "./sse-writer.js";

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
    const abort = new AbortController();
    // The socket closing is how a departed caller is noticed, even when no
    // write is pending (reply.raw, not request.raw: DESIGN §9).
    const onClose = () => {
      if (!reply.raw.writableFinished) abort.abort();
    };
    reply.raw.on("close", onClose);
    let events: AsyncIterator<CreateChatCompletionResponse>;
    let first: IteratorResult<CreateChatCompletionResponse>;
    try {
      const message = chatRequestFromJson(request.body, request.params.internId);
      events = client.createChatCompletion(message, { signal: abort.signal, headers: forwardedHeaders(request) })[Symbol.asyncIterator]();
      first = await events.next();
    } catch (error) {
      reply.raw.off("close", onClose);
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
      request.log.info({ err: abort.signal.aborted ? undefined : error }, "chat stream ended early");
      reply.raw.destroy();
    } finally {
      reply.raw.off("close", onClose);
      onStream?.(false);
    }
  });
}
