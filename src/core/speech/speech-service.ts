import { SpanKind, type Tracer } from "@opentelemetry/api";
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  SpeechService,
  StreamSpeechResponseSchema,
  type CreateSpeechRequest,
  type StreamSpeechResponse,
} from "../../gen/switchboard/v1/speech_pb.js";
import { speechCost, type SpeechModelRegistry } from "../../providers/speech/index.js";
import type { SpeechSettlement } from "../../store/speech-charges.js";
import type { Store } from "../../store/store.js";
import { noteGenerationId } from "../call-observer.js";
import { callSpanOf, endSpan, startChildSpan } from "../call-tracing.js";
import { startTracedOperation } from "../trace-metadata.js";
import { callerOf } from "../caller.js";
import { catalogueError, describeError } from "../error-catalogue.js";
import type { RateLimiter } from "../rate-limiter.js";
import { speechEngineError } from "./speech-engine-error.js";
import { parseSpeechRequest, type ValidatedSpeech } from "./speech-request.js";

/** What the speech service is built from. */
export interface SpeechServiceOptions {
  /** Spans of this service's own work, under each call's span. */
  tracer: Tracer;
  store: Pick<Store, "speechCharges">;
  /** The models callers may name, built once at startup. */
  registry: Pick<SpeechModelRegistry, "resolve" | "models">;
  /** Syntheses per member. */
  limiter: RateLimiter;
  /** One line per synthesis: ids, model, cost and outcome; never the input text or audio. */
  logger?: Pick<Logger, "info" | "error">;
  /** Told when a synthesis starts holding an engine and when it lets go (a gauge). */
  onSynthesis?: (open: boolean) => void;
  /** Seconds of audio per second of wall time of each completed PCM synthesis (MP3 sizes do not tell a duration). */
  onRealTimeFactor?: (model: string, factor: number) => void;
}

/** 24 kHz × 16-bit mono. */
const pcmBytesPerSecond = 48_000;

/**
 * When a failed synthesis is refunded. `first-audio` (streaming): only when
 * no audio was sent to the caller, since after that the caller holds part of
 * it and an upstream has billed it. `completion` (unary): whenever the caller
 * does not receive the whole audio.
 */
type RefundRule = "first-audio" | "completion";

/** The store keeps balances in micro-dollars (numeric(20, 6)), so that is the unit charged. */
function chargeable(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

function newGenerationId(): string {
  return `gen-${randomBytes(12).toString("base64url")}`;
}

const startEvent = (contentType: string, generationId: string): StreamSpeechResponse =>
  create(StreamSpeechResponseSchema, { event: { case: "start", value: { contentType, generationId } } });
const audioEvent = (audio: Uint8Array): StreamSpeechResponse => create(StreamSpeechResponseSchema, { event: { case: "audio", value: audio } });

async function nextAudio(audio: AsyncIterator<Uint8Array>, signal: AbortSignal): Promise<Uint8Array | undefined> {
  try {
    const result = await audio.next();
    return result.done ? undefined : result.value;
  } catch (error) {
    throw speechEngineError(error, signal);
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.length;
  }
  return whole;
}

/**
 * SpeechService: every rule of speech synthesis. Validates, rate-limits,
 * charges the organization before the engine starts, and streams the engine's
 * audio. The engine's first chunk is awaited before the `start` message, so
 * any refusal up to then (unknown voice, upstream 5xx) is a real error status
 * the bridge can answer with a JSON envelope. The charge stays pending in the
 * store until the refund rule can no longer give it back, so a process that
 * dies meanwhile leaves it for the sweep (`startSpeechChargeSweep`) to refund.
 */
export function createSpeechService(options: SpeechServiceOptions): ServiceImpl<typeof SpeechService> {
  /** Settles a pending charge; a store failure is logged, never thrown at the caller, and leaves the row to the sweep. */
  async function settleCharge(orgId: string, usd: number, generationId: string, refund: boolean): Promise<SpeechSettlement | "failed"> {
    try {
      return await options.store.speechCharges.settle(generationId, refund);
    } catch (error) {
      options.logger?.error({ err: error, generation_id: generationId, org_id: orgId, cost_usd: usd }, refund ? "speech refund failed" : "speech charge not settled");
      return "failed";
    }
  }

  async function* synthesize(message: CreateSpeechRequest | undefined, context: HandlerContext, refundRule: RefundRule): AsyncGenerator<StreamSpeechResponse> {
    const caller = callerOf(context);
    if (message === undefined) throw catalogueError("bad_request", "request is required.");
    const speech: ValidatedSpeech = parseSpeechRequest(message, context.requestHeader.get("x-session-id"), options.registry);
    await options.limiter.consume(caller.memberId);
    const cost = chargeable(speechCost(speech.model, message.input));
    // The pending charge is recorded under the generation id, so the id is made before charging.
    const generationId = newGenerationId();
    if (cost > 0 && !(await options.store.speechCharges.charge(caller.orgId, cost, generationId))) {
      throw catalogueError("insufficient_credits", `Insufficient credits: this request costs ${cost} USD.`);
    }
    noteGenerationId(context, generationId);
    const operationSpan = startTracedOperation(options.tracer, callSpanOf(context), "speech.synthesize", speech);
    operationSpan.setAttributes({ "switchboard.generation_id": generationId, "switchboard.model": speech.model.id });
    const engineSpan = startChildSpan(options.tracer, operationSpan, `speech.engine ${speech.model.id}`, SpanKind.CLIENT);
    let failure: unknown;
    const startedAt = performance.now();
    let audioBytes = 0;
    let outcome = "abandoned";
    options.onSynthesis?.(true);
    const audio = speech.model.engine.synthesize(speech.engineRequest, context.signal)[Symbol.asyncIterator]();
    let settled: Promise<void> | undefined;
    // Streaming: the charge is kept once audio went out, so its row is settled then rather than at the end.
    let keptAtFirstAudio: Promise<SpeechSettlement | "failed"> | undefined;
    // Releases the engine, settles the charge and logs, once. Also run on abort (caller gone,
    // shutdown) while this generator is parked at a `yield` behind a caller that stopped reading:
    // the transport, waiting on the socket, would never resume or close it, and the worker job or
    // upstream socket would stay held.
    const settle = () =>
      (settled ??= (async () => {
        await audio.return?.().catch(() => undefined);
        const owed = refundRule === "first-audio" ? audioBytes === 0 : outcome !== "completed";
        const early = await keptAtFirstAudio;
        const settlement = cost > 0 ? await settleCharge(caller.orgId, cost, generationId, owed) : "kept";
        // A row gone without this call having kept it was refunded by a sweep.
        const refunded = settlement === "refunded" || (settlement === "gone" && early !== "kept");
        options.onSynthesis?.(false);
        for (const span of [engineSpan, operationSpan]) {
          span.setAttributes({ "switchboard.outcome": outcome, "switchboard.audio_bytes": audioBytes });
          endSpan(span, failure);
        }
        options.logger?.info(
          {
            generation_id: generationId,
            model: speech.model.id,
            format: speech.engineRequest.format,
            input_chars: speech.inputChars,
            audio_bytes: audioBytes,
            cost_usd: refunded ? 0 : cost,
            refunded,
            org_id: caller.orgId,
            member_id: caller.memberId,
            session_id: speech.sessionId,
            user: speech.user,
            trace_id: typeof speech.trace?.trace_id === "string" ? speech.trace.trace_id : undefined,
            outcome,
            ms: Math.round(performance.now() - startedAt),
          },
          "speech synthesis",
        );
      })());
    const onCallerGone = () => {
      if (outcome === "abandoned") outcome = "cancelled";
      void settle();
    };
    context.signal.addEventListener("abort", onCallerGone, { once: true });
    try {
      const first = await nextAudio(audio, context.signal);
      if (first === undefined) throw catalogueError("provider_error", `${speech.model.id} returned no audio.`);
      yield startEvent(speech.contentType, generationId);
      for (let chunk: Uint8Array | undefined = first; chunk !== undefined; chunk = await nextAudio(audio, context.signal)) {
        audioBytes += chunk.length;
        if (refundRule === "first-audio" && cost > 0) keptAtFirstAudio ??= settleCharge(caller.orgId, cost, generationId, false);
        yield audioEvent(chunk);
      }
      outcome = "completed";
      const wallSeconds = (performance.now() - startedAt) / 1000;
      if (speech.engineRequest.format === "pcm" && wallSeconds > 0) options.onRealTimeFactor?.(speech.model.id, audioBytes / pcmBytesPerSecond / wallSeconds);
    } catch (error) {
      if (outcome === "abandoned") outcome = context.signal.aborted ? "cancelled" : describeError(error).reason || "failed";
      failure = error;
      throw error;
    } finally {
      context.signal.removeEventListener("abort", onCallerGone);
      await settle();
    }
  }

  return {
    async createSpeech(request, context) {
      let start: { contentType: string; generationId: string } | undefined;
      const chunks: Uint8Array[] = [];
      for await (const response of synthesize(request, context, "completion")) {
        if (response.event.case === "start") start = response.event.value;
        else if (response.event.case === "audio") chunks.push(response.event.value);
      }
      return { contentType: start?.contentType ?? "", generationId: start?.generationId ?? "", audio: concat(chunks) };
    },
    streamSpeech(request, context) {
      return synthesize(request.request, context, "first-audio");
    },
  };
}
