import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { CreateSpeechRequest, SpeechReference } from "../../gen/switchboard/v1/speech_pb.js";
import {
  espeakModelId,
  espeakSpeedRange,
  SpeechProviderError,
  type SpeechFormat,
  type SpeechModel,
  type SpeechModelRegistry,
  type SpeechReference as EngineReference,
  type SpeechRequest,
} from "../../providers/speech/index.js";
import { catalogueError } from "../error-catalogue.js";
import { speechLimits } from "./speech-limits.js";
import { characterCount } from "../text-rules.js";
import { observabilityIdsOf } from "../observability-ids.js";

/** A request that passed every check: the engine's part, and what stays with Switchboard. */
export interface ValidatedSpeech {
  model: SpeechModel;
  /** What the engine receives; observability fields are deliberately not in it. */
  engineRequest: SpeechRequest;
  contentType: "audio/mpeg" | "audio/pcm";
  /** Input length in code points, the unit prices are quoted in. */
  inputChars: number;
  sessionId?: string;
  user?: string;
  trace?: JsonObject;
}

const contentTypes: Record<SpeechFormat, ValidatedSpeech["contentType"]> = { mp3: "audio/mpeg", pcm: "audio/pcm" };
const dataUriHead = /^data:audio\/[A-Za-z0-9.+-]{1,64};base64,/;
const base64Body = /^[A-Za-z0-9+/]*={0,2}$/;
const audioFormat = /^[A-Za-z0-9.+-]{1,32}$/;

function invalid(message: string): never {
  throw catalogueError("bad_request", message);
}


function resolveModel(registry: Pick<SpeechModelRegistry, "resolve">, modelId: string): SpeechModel {
  if (modelId === "") invalid("model is required.");
  if (characterCount(modelId, speechLimits.idChars) > speechLimits.idChars) invalid(`model must be at most ${speechLimits.idChars} characters.`);
  try {
    return registry.resolve(modelId);
  } catch (error) {
    if (error instanceof SpeechProviderError) invalid(error.message);
    throw error;
  }
}

function checkSpeed(speed: number | undefined, model: SpeechModel): void {
  if (speed === undefined) return;
  const range = model.id === espeakModelId ? espeakSpeedRange : speechLimits.upstreamSpeed;
  if (!Number.isFinite(speed) || speed < range.min || speed > range.max) {
    invalid(`speed must be a number from ${range.min} to ${range.max} for ${model.id}.`);
  }
}

/** Decoded bytes of a base64 payload, without decoding it. */
function base64Bytes(payload: string): number {
  const padding = payload.endsWith("==") ? 2 : payload.endsWith("=") ? 1 : 0;
  return Math.floor((payload.length * 3) / 4) - padding;
}

function checkAudioPart(part: SpeechReference, where: string): void {
  const data = part.inputAudio?.data;
  if (data === undefined || data === "") invalid(`${where}.input_audio.data is required: a data URI such as data:audio/wav;base64,….`);
  const head = dataUriHead.exec(data.slice(0, 128));
  if (!head) invalid(`${where}.input_audio.data must be a base64 data URI of the form data:audio/<type>;base64,<data>.`);
  const payload = data.slice(head[0].length);
  if (payload === "" || payload.length % 4 === 1 || !base64Body.test(payload)) invalid(`${where}.input_audio.data does not hold valid base64 audio.`);
  if (base64Bytes(payload) > speechLimits.referenceAudioBytes) {
    invalid(`${where}.input_audio.data exceeds ${speechLimits.referenceAudioBytes / (1024 * 1024)} MiB of decoded audio.`);
  }
  const format = part.inputAudio?.format;
  if (format !== undefined && !audioFormat.test(format)) invalid(`${where}.input_audio.format must be 1 to 32 letters, digits, '.', '+' or '-', such as wav or mp3.`);
}

function checkTextPart(part: SpeechReference, where: string): void {
  if (part.text === undefined || part.text.trim() === "") invalid(`${where}.text is required: the transcript of the reference audio.`);
  if (characterCount(part.text, speechLimits.referenceTextChars) > speechLimits.referenceTextChars) {
    invalid(`${where}.text exceeds ${speechLimits.referenceTextChars} characters.`);
  }
}

/** Checks the cloning reference: one `input_audio` part, at most one `text` part, nothing else. */
function checkReferences(references: readonly SpeechReference[], model: SpeechModel, cloners: readonly string[]): void {
  if (references.length === 0) return;
  if (!model.supportsCloning) {
    const choice = cloners.length > 0 ? `choose a model that does (${cloners.join(", ")})` : "no configured model supports cloning";
    invalid(`${model.id} does not support voice cloning: remove input_references, or ${choice}.`);
  }
  let audioParts = 0;
  let textParts = 0;
  references.forEach((part, i) => {
    const where = `input_references[${i}]`;
    if (part.type === "input_audio") {
      audioParts++;
      checkAudioPart(part, where);
    } else if (part.type === "text") {
      textParts++;
      checkTextPart(part, where);
    } else {
      invalid(`${where}.type must be input_audio or text.`);
    }
  });
  if (audioParts !== 1) invalid("input_references must hold exactly one input_audio part.");
  if (textParts > 1) invalid("input_references may hold at most one text part.");
}

/** Plain copies of the parts, so no protobuf bookkeeping (`$typeName`) reaches an upstream body. */
function engineReferences(references: readonly SpeechReference[]): EngineReference[] {
  return references.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: part.type, inputAudio: { data: part.inputAudio!.data, ...(part.inputAudio!.format === undefined ? {} : { format: part.inputAudio!.format }) } },
  );
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The caller's passthrough options for this model's provider: `provider.options[slug]`,
 * where the slug is the model id up to its first `/` (`openai` for `openai/tts-1`),
 * the same shape video requests use.
 */
function providerOptions(provider: JsonObject | undefined, model: SpeechModel): JsonObject | undefined {
  if (provider === undefined || provider.options === undefined) return undefined;
  if (!isObject(provider.options)) invalid("provider.options must be an object keyed by provider slug.");
  const slug = model.id.split("/")[0];
  const options = provider.options[slug];
  if (options === undefined) return undefined;
  if (!isObject(options)) invalid(`provider.options.${slug} must be an object.`);
  return options;
}

/**
 * Validates a speech request as the spec and `speechLimits` say, so HTTP and
 * gRPC callers meet the same 400s. `headerSessionId` is the `x-session-id`
 * header; a non-empty body `session_id` wins over it.
 */
export function parseSpeechRequest(
  request: CreateSpeechRequest,
  headerSessionId: string | null,
  registry: Pick<SpeechModelRegistry, "resolve" | "models">,
): ValidatedSpeech {
  if (request.input.trim() === "") invalid("input is required and must contain text to speak.");
  const inputChars = characterCount(request.input, speechLimits.inputChars);
  if (inputChars > speechLimits.inputChars) invalid(`input exceeds ${speechLimits.inputChars} characters.`);
  const model = resolveModel(registry, request.model);
  if (request.voice === "") invalid("voice is required (at least 1 character).");
  const format = request.responseFormat ?? "pcm";
  if (format !== "mp3" && format !== "pcm") invalid("response_format must be mp3 or pcm.");
  checkSpeed(request.speed, model);
  const cloners = registry.models.filter((candidate) => candidate.supportsCloning).map((candidate) => candidate.id);
  checkReferences(request.inputReferences, model, cloners);
  const options = providerOptions(request.provider, model);
  const { sessionId, user } = observabilityIdsOf(request, headerSessionId);

  return {
    model,
    engineRequest: {
      input: request.input,
      voice: request.voice,
      format,
      ...(request.speed === undefined ? {} : { speed: request.speed }),
      ...(request.inputReferences.length === 0 ? {} : { references: engineReferences(request.inputReferences) }),
      ...(options === undefined ? {} : { providerOptions: options }),
    },
    contentType: contentTypes[format],
    inputChars,
    sessionId,
    user,
    trace: request.trace,
  };
}
