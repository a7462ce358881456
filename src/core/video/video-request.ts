import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { CreateVideoRequest, VideoFrameImage as FrameImageMessage, VideoInputReference as InputReferenceMessage, VideoUrl } from "../../gen/switchboard/v1/video_pb.js";
import {
  formatVideoSize,
  parseVideoSize,
  priceVideo,
  resolveVideoSize,
  type VideoFrameImage,
  type VideoGenerationRequest,
  type VideoInputReference,
  type VideoModel,
  type VideoModelCapabilities,
  type VideoModelRegistry,
} from "../../providers/video/index.js";
import { checkAddressLiteral, OutboundUrlError, parseOutboundUrl } from "../../providers/webhook/index.js";
import { catalogueError } from "../error-catalogue.js";
import { nulTextPath } from "../text-rules.js";
import { observabilityIdsOf } from "../observability-ids.js";

/** A request that passed every check, split into what the provider sees and what only we keep. */
export interface ValidatedVideoRequest {
  model: VideoModel;
  /** Sent to the provider: no session, user, trace or callback, by construction. */
  generation: VideoGenerationRequest;
  callbackUrl?: string;
  sessionId?: string;
  user?: string;
  trace?: JsonObject;
  /** Price of the job as asked, reserved at submit. */
  costUsd: number;
}

/** What validation needs besides the message. */
export interface VideoRequestContext {
  models: Pick<VideoModelRegistry, "get" | "list">;
  /** The `x-session-id` header; the body's `session_id` wins over it. */
  sessionHeader: string | null;
  /** Webhooks may go to private, loopback and link-local addresses (`WEBHOOK_ALLOW_PRIVATE=1`). */
  allowPrivateDestinations?: boolean;
}

/** Tracing keys the spec names; they must be strings. Other keys pass through as custom metadata. */
const knownTraceKeys = ["trace_id", "trace_name", "span_name", "generation_name", "parent_span_id"] as const;

function invalid(message: string): never {
  throw catalogueError("bad_request", message);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An image, audio or video address: an absolute http(s) URL or a data URI. */
function mediaUrl(url: VideoUrl | undefined, where: string): string {
  const text = url?.url;
  if (!text) invalid(`${where}.url is required.`);
  let protocol: string;
  try {
    protocol = new URL(text).protocol;
  } catch {
    invalid(`${where}.url must be an absolute http(s) URL or a data: URI.`);
  }
  if (protocol !== "https:" && protocol !== "http:" && protocol !== "data:") invalid(`${where}.url must be an absolute http(s) URL or a data: URI.`);
  return text;
}

function frameImages(frames: readonly FrameImageMessage[]): VideoFrameImage[] {
  const pinned = new Set<string>();
  return frames.map((frame, i) => {
    const at = `frame_images[${i}]`;
    if (frame.type !== "image_url") invalid(`${at}.type must be image_url.`);
    if (frame.frameType !== "first_frame" && frame.frameType !== "last_frame") invalid(`${at}.frame_type must be first_frame or last_frame.`);
    if (pinned.has(frame.frameType)) invalid(`${at}: only one ${frame.frameType} may be given.`);
    pinned.add(frame.frameType);
    return { type: "image_url", image_url: { url: mediaUrl(frame.imageUrl, `${at}.image_url`) }, frame_type: frame.frameType };
  });
}

function inputReference(reference: InputReferenceMessage, at: string): VideoInputReference {
  switch (reference.type) {
    case "image_url":
      return { type: "image_url", image_url: { url: mediaUrl(reference.imageUrl, `${at}.image_url`) } };
    case "audio_url":
      return { type: "audio_url", audio_url: { url: mediaUrl(reference.audioUrl, `${at}.audio_url`) } };
    case "video_url":
      return { type: "video_url", video_url: { url: mediaUrl(reference.videoUrl, `${at}.video_url`) } };
    default:
      invalid(`${at}.type must be image_url, audio_url or video_url.`);
  }
}

/** Every reference is checked; audio and video ones reach only providers that honour them (the spec), the rest see the images alone. */
function inputReferences(references: readonly InputReferenceMessage[], capabilities: VideoModelCapabilities): VideoInputReference[] {
  return references
    .map((reference, i) => inputReference(reference, `input_references[${i}]`))
    .filter((reference) => reference.type === "image_url" || (reference.type === "audio_url" ? capabilities.audioReferences : capabilities.videoReferences));
}

/**
 * `provider.options` must map provider slugs to objects; each provider reads
 * its own slug. Other members of `provider` (routing preferences of other
 * gateways) mean nothing here and are left out.
 */
function providerOptions(provider: JsonObject | undefined): VideoGenerationRequest["provider"] {
  const options = provider?.options;
  if (options === undefined || options === null) return undefined;
  if (!isObject(options)) invalid("provider.options must be an object of provider slugs to objects.");
  for (const [slug, value] of Object.entries(options)) {
    if (!isObject(value)) invalid(`provider.options.${slug} must be an object.`);
  }
  return { options: options as Record<string, Record<string, unknown>> };
}

function checkTrace(trace: JsonObject | undefined): void {
  for (const key of knownTraceKeys) {
    if (trace?.[key] !== undefined && typeof trace[key] !== "string") invalid(`trace.${key} must be a string.`);
  }
}

function modelOf(request: CreateVideoRequest, models: VideoRequestContext["models"]): VideoModel {
  if (!request.model) invalid("model is required.");
  const model = models.get(request.model);
  if (!model) invalid(`Unknown model ${request.model}: model must be one of ${models.list().map((known) => known.id).join(", ")}.`);
  return model;
}

function durationOf(request: CreateVideoRequest, model: VideoModel): number | undefined {
  if (request.duration === undefined) return undefined;
  const { durations, maxDurationSeconds } = model.capabilities;
  if (request.duration < 1n) invalid("duration must be an integer of at least 1 second.");
  const max = maxDurationSeconds ?? Number.MAX_SAFE_INTEGER;
  if (request.duration > BigInt(max)) invalid(`duration must be at most ${max} seconds for ${model.id}.`);
  const duration = Number(request.duration);
  if (durations && !durations.includes(duration)) invalid(`duration must be one of ${durations.join(", ")} seconds for ${model.id}.`);
  return duration;
}

function seedOf(request: CreateVideoRequest): number | undefined {
  if (request.seed === undefined) return undefined;
  const limit = BigInt(Number.MAX_SAFE_INTEGER);
  if (request.seed > limit || request.seed < -limit) invalid(`seed must be an integer from -${limit} to ${limit}.`);
  return Number(request.seed);
}

function upscalingMembers(request: CreateVideoRequest, model: VideoModel): Pick<VideoGenerationRequest, "creativity" | "upscale_factor"> {
  const { creativity, upscaleFactor } = request;
  if ((creativity !== undefined || upscaleFactor !== undefined) && !model.capabilities.upscaling) {
    invalid(`${creativity !== undefined ? "creativity" : "upscale_factor"} is for upscaling models only; ${model.id} is a generation model.`);
  }
  if (creativity !== undefined && creativity < 0) invalid("creativity must be an integer of at least 0.");
  if (upscaleFactor !== undefined && !(Number.isFinite(upscaleFactor) && upscaleFactor > 0)) invalid("upscale_factor must be a number greater than 0.");
  return { ...(creativity !== undefined && { creativity }), ...(upscaleFactor !== undefined && { upscale_factor: upscaleFactor }) };
}

function callbackUrlOf(request: CreateVideoRequest, allowPrivate: boolean): string | undefined {
  if (request.callbackUrl === undefined) return undefined;
  try {
    // An address written out is refused now, before the job is charged for a
    // webhook that could never be delivered; a host name is checked when sent.
    checkAddressLiteral(parseOutboundUrl(request.callbackUrl), { allowPrivate });
    return request.callbackUrl;
  } catch (error) {
    if (error instanceof OutboundUrlError) invalid(`callback_url: ${error.message}`);
    throw error;
  }
}

/**
 * Validates a video request member by member (wire names in DESIGN.md §5)
 * against the model's capabilities, and prices it. Throws the catalogue's
 * 400 with a message naming the member at fault.
 */
export function parseVideoRequest(request: CreateVideoRequest, context: VideoRequestContext): ValidatedVideoRequest {
  const model = modelOf(request, context.models);
  const { capabilities } = model;
  const prompt = request.prompt?.trim() ? request.prompt : undefined;
  const frames = frameImages(request.frameImages);
  const references = inputReferences(request.inputReferences, capabilities);
  if (prompt === undefined) {
    if (!capabilities.promptOptional) invalid(`prompt is required for ${model.id}.`);
    if (frames.length === 0 && !references.some((reference) => reference.type === "image_url")) {
      invalid(`${model.id} needs a prompt or an image to generate from (frame_images or an image_url input reference).`);
    }
  }
  const sized = resolveVideoSize({ size: request.size, resolution: request.resolution, aspect_ratio: request.aspectRatio });
  if (!sized.ok) invalid(sized.error);
  if (sized.size && capabilities.sizes && !capabilities.sizes.includes(formatVideoSize(sized.size))) {
    invalid(`size ${formatVideoSize(sized.size)} is not offered by ${model.id}: use one of ${capabilities.sizes.join(", ")}.`);
  }
  const duration = durationOf(request, model);
  const seed = seedOf(request);
  const generateAudio = request.generateAudio ?? capabilities.generateAudio;
  const { sessionId, user } = observabilityIdsOf(request, context.sessionHeader);
  checkTrace(request.trace);
  const provider = providerOptions(request.provider);

  const generation: VideoGenerationRequest = {
    model: model.id,
    ...(prompt !== undefined && { prompt }),
    ...(request.aspectRatio !== undefined && { aspect_ratio: request.aspectRatio }),
    ...(request.resolution !== undefined && { resolution: request.resolution }),
    ...(request.size !== undefined && { size: request.size }),
    ...(duration !== undefined && { duration }),
    ...(seed !== undefined && { seed }),
    generate_audio: generateAudio,
    ...upscalingMembers(request, model),
    ...(frames.length > 0 && { frame_images: frames }),
    ...(references.length > 0 && { input_references: references }),
    ...(provider && { provider }),
  };
  const callbackUrl = callbackUrlOf(request, context.allowPrivateDestinations ?? false);
  const nulAt = nulTextPath({ ...generation, callback_url: callbackUrl, session_id: sessionId, user, trace: request.trace }, "");
  if (nulAt) invalid(`${nulAt.slice(1)} must not contain the NUL character (U+0000).`);
  const defaultSize = capabilities.defaultSize === undefined ? undefined : parseVideoSize(capabilities.defaultSize);
  return {
    model,
    generation,
    callbackUrl,
    ...(sessionId && { sessionId }),
    ...(user && { user }),
    ...(request.trace && { trace: request.trace }),
    costUsd: priceVideo(model.pricing, { durationSeconds: duration ?? capabilities.defaultDurationSeconds, size: sized.size ?? defaultSize, generateAudio }),
  };
}
