import type { FastifyInstance, FastifyRequest } from "fastify";
import { createClient, type Transport } from "@connectrpc/connect";
import { CreateChatCompletionRequestSchema, InternChatService, type CreateChatCompletionResponse } from "../gen/switchboard/v1/chat_pb.js";
import { chatChunkJson } from "./chat-chunk-json.js";
import { coreCallOptions } from "./core-call-options.js";
import { asBridgeRefusal, firstEventOf, refuse } from "./bridge-refusal.js";
import { noRoute } from "./no-route.js";
import { requestFromJson } from "./request-from-json.js";
import { createSseWriter } from "./sse-writer.js";
import { watchClientDisconnect } from "./client-disconnect.js";

/**
 * POST /interns/{internId}/chat/completions → InternChatService as SSE.
 * Nothing is written until the core's first event or refusal, so refusals
 * are real HTTP errors; after that, everything is a chunk.
 */
export function registerChatRoute(app: FastifyInstance, transport: Transport, onStream?: (open: boolean) => void): void {
  const client = createClient(InternChatService, transport);
  // Whether the core lets the caller reach interns at all: a chat call with no messages, refused before any work.
  const accessProbe = (request: FastifyRequest) =>
    firstEventOf((signal) => client.createChatCompletion({ internId: (request.params as { internId?: string }).internId ?? "" }, { ...coreCallOptions(request), signal }));
  // Every other path under /interns: not found, unless the caller may not see interns at all.
  for (const path of ["/interns", "/interns/*"]) {
    app.all(path, { config: { accessProbe } }, (request, reply) => refuse(request, reply, asBridgeRefusal(noRoute(request))));
  }
  app.post<{ Params: { internId: string } }>("/interns/:internId/chat/completions", { config: { accessProbe } }, async (request, reply) => {
    const disconnect = watchClientDisconnect(reply);
    let events: AsyncIterator<CreateChatCompletionResponse>;
    let first: IteratorResult<CreateChatCompletionResponse>;
    try {
      const message = requestFromJson(CreateChatCompletionRequestSchema, request.body, { intern_id: request.params.internId });
      events = client.createChatCompletion(message, { ...coreCallOptions(request), signal: disconnect.signal })[Symbol.asyncIterator]();
      first = await events.next();
    } catch (error) {
      disconnect.release();
      return refuse(request, reply, error);
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
      // Nobody reads the rest: the core call (and so the run) ends here, even if the socket's close is still to come.
      disconnect.abort();
      reply.raw.destroy();
    } finally {
      disconnect.release();
      onStream?.(false);
    }
  });
}
