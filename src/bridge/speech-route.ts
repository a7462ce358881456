import type { FastifyInstance, FastifyRequest } from "fastify";
import { createClient, type Transport } from "@connectrpc/connect";
import { CreateSpeechRequestSchema, SpeechService, type SpeechStart, type StreamSpeechResponse } from "../gen/switchboard/v1/speech_pb.js";
import { catalogueError } from "../core/error-catalogue.js";
import { speechLimits } from "../core/speech/speech-limits.js";
import { createAudioStreamWriter } from "./audio-stream-writer.js";
import { watchClientDisconnect } from "./client-disconnect.js";
import { coreCallOptions } from "./core-call-options.js";
import { firstEventOf, refuse } from "./bridge-refusal.js";
import { requestFromJson } from "./request-from-json.js";


/** The core opens every stream with `start`; anything else is a broken contract, not the caller's fault. */
async function startOf(events: AsyncIterator<StreamSpeechResponse>): Promise<SpeechStart> {
  const first = await events.next();
  if (first.done || first.value.event.case !== "start") throw catalogueError("internal", "The speech stream did not start.");
  return first.value.event.value;
}

/**
 * POST /audio/speech → SpeechService.StreamSpeech as a raw audio body.
 * Nothing is written until the core's `start` (sent once the engine has
 * produced audio) or its refusal, so refusals are JSON envelopes; after that
 * the body is the audio, and a failure cuts the connection (a truncated
 * chunked body), the only signal left once a 200 is out.
 */
export function registerSpeechRoute(app: FastifyInstance, transport: Transport): void {
  const client = createClient(SpeechService, transport);
  // The body limit is the core's: cloning references need more than the surface's 1 MiB.
  // A synthesis of nothing: refused by the core's validation, after its interceptors, before any work.
  const accessProbe = (request: FastifyRequest) => firstEventOf((signal) => client.streamSpeech({ request: {} }, { ...coreCallOptions(request), signal }));
  app.post("/audio/speech", { bodyLimit: speechLimits.bodyBytes, config: { accessProbe } }, async (request, reply) => {
    // A departed client stops the engine.
    const disconnect = watchClientDisconnect(reply);
    let events: AsyncIterator<StreamSpeechResponse>;
    let start: SpeechStart;
    try {
      const message = requestFromJson(CreateSpeechRequestSchema, request.body);
      events = client.streamSpeech({ request: message }, { ...coreCallOptions(request), signal: disconnect.signal })[Symbol.asyncIterator]();
      start = await startOf(events);
    } catch (error) {
      disconnect.release();
      disconnect.abort();
      return refuse(request, reply, error);
    }
    reply.hijack();
    const audio = createAudioStreamWriter(reply.raw);
    audio.open(start.contentType, { "x-generation-id": start.generationId, "x-request-id": request.id });
    let completed = false;
    try {
      for (let result = await events.next(); !result.done; result = await events.next()) {
        if (result.value.event.case === "audio" && !(await audio.write(result.value.event.value))) break;
      }
      completed = !disconnect.signal.aborted;
      if (completed) audio.end();
    } catch (error) {
      request.log.info({ err: disconnect.signal.aborted ? undefined : error, generation_id: start.generationId }, "speech stream ended early");
      reply.raw.destroy();
    } finally {
      disconnect.release();
      if (!completed) {
        // Abort and close the call, so the core lets go of the engine however the body ended.
        disconnect.abort();
        await events.return?.().catch(() => undefined);
      }
    }
  });
}
