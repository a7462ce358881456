import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { createClient, type Transport } from "@connectrpc/connect";
import { CreateVideoRequestSchema, VideoService, type GetVideoContentResponse, type VideoContentStart } from "../gen/switchboard/v1/video_pb.js";
import { catalogueError } from "../core/error-catalogue.js";
import { videoLimits } from "../core/video/video-limits.js";
import { watchClientDisconnect } from "./client-disconnect.js";
import { coreCallOptions } from "./core-call-options.js";
import { bridgeRefusal, refuse } from "./bridge-refusal.js";
import { requestFromJson } from "./request-from-json.js";
import { videoJobJson } from "./video-job-json.js";

// The query string is text; the core wants an integer. Only the syntax is
// checked here: which outputs exist is the core's to say.
function indexParam(query: Record<string, unknown>): number | undefined {
  const value = query.index;
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^\d{1,9}$/.test(value)) throw bridgeRefusal("index must be an integer of at least 0.");
  return Number(value);
}

/** The core opens every content stream with `start`; anything else is a broken contract, not the caller's fault. */
async function startOf(events: AsyncIterator<GetVideoContentResponse>): Promise<VideoContentStart> {
  const first = await events.next();
  if (first.done || first.value.event.case !== "start") throw catalogueError("internal", "The video content stream did not start.");
  return first.value.event.value;
}

/**
 * The video bytes after `start`. It ends as soon as `length` bytes are out,
 * not when the core's stream closes a moment later, so the response is
 * complete (and its connection idle) by the time the client has every byte;
 * returning early releases the core's stream.
 */
async function* contentBytes(events: AsyncIterator<GetVideoContentResponse>, length: bigint): AsyncGenerator<Uint8Array> {
  let sent = 0n;
  try {
    for (let result = await events.next(); !result.done; result = await events.next()) {
      if (result.value.event.case !== "data") continue;
      sent += BigInt(result.value.event.value.length);
      yield result.value.event.value;
      if (sent >= length) return;
    }
  } finally {
    await events.return?.();
  }
}

/**
 * `/videos` → VideoService: submit (`POST /videos`, 200 as the spec says),
 * poll (`GET /videos/{id}`) and download (`GET /videos/{id}/content?index=N`,
 * streamed as `video/mp4`). Refusals before the first byte are JSON envelopes.
 */
export function registerVideoRoutes(app: FastifyInstance, transport: Transport): void {
  const client = createClient(VideoService, transport);

  // The body limit is the core's: frame images as data URIs need more than the surface's 1 MiB.
  // A submission with no members: refused by the core's validation, after its interceptors, before any work.
  const submitProbe = (request: FastifyRequest) => client.createVideo({}, coreCallOptions(request));
  // A poll of no job: refused as not found without a lookup.
  const pollProbe = (request: FastifyRequest) => client.getVideo({ id: "" }, coreCallOptions(request));
  app.post("/videos", { bodyLimit: videoLimits.bodyBytes, config: { accessProbe: submitProbe } }, async (request, reply) => {
    try {
      const response = await client.createVideo(requestFromJson(CreateVideoRequestSchema, request.body), coreCallOptions(request));
      if (!response.job) throw catalogueError("internal", "The video job was not returned.");
      return videoJobJson(response.job);
    } catch (error) {
      return refuse(request, reply, error);
    }
  });

  app.get<{ Params: { id: string } }>("/videos/:id", async (request, reply) => {
    try {
      const response = await client.getVideo({ id: request.params.id }, coreCallOptions(request));
      if (!response.job) throw catalogueError("internal", "The video job was not returned.");
      return videoJobJson(response.job);
    } catch (error) {
      return refuse(request, reply, error);
    }
  });

  app.get<{ Params: { id: string } }>("/videos/:id/content", { config: { accessProbe: pollProbe } }, async (request, reply) => {
    // A departed client stops the file read in the core.
    const disconnect = watchClientDisconnect(reply);
    let events: AsyncIterator<GetVideoContentResponse>;
    let start: VideoContentStart;
    try {
      const index = indexParam(request.query as Record<string, unknown>);
      events = client.getVideoContent({ id: request.params.id, index }, { ...coreCallOptions(request), signal: disconnect.signal })[Symbol.asyncIterator]();
      start = await startOf(events);
    } catch (error) {
      disconnect.release();
      return refuse(request, reply, error);
    }
    return reply.type(start.contentType).header("content-length", String(start.contentLength)).send(Readable.from(contentBytes(events, start.contentLength), { objectMode: false }));
  });
}
