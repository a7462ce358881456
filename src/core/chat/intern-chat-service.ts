import { SpanKind, type Span, type Tracer } from "@opentelemetry/api";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { RunEvent } from "../../gen/switchboard/host/v1/host_pb.js";
import {
  CreateChatCompletionResponseSchema,
  InternChatService,
  type ChatCompletionChunk,
  type CreateChatCompletionResponse,
} from "../../gen/switchboard/v1/chat_pb.js";
import { noteCallerLeft, noteGenerationId } from "../call-observer.js";
import { callSpanOf, endSpan, injectTraceContext, startChildSpan } from "../call-tracing.js";
import { callerOf } from "../caller.js";
import { catalogueError, catalogueErrorForReason, describeError } from "../error-catalogue.js";
import { shownId } from "../text-rules.js";
import type { RateLimiter } from "../rate-limiter.js";
import { parseChatTurn, type ChatTurn } from "./chat-request.js";
import { createChunkBuilder, type ChunkBuilder } from "./chunk-builder.js";
import { hostErrorToCallerError, hostStreamBreakToCallerError } from "./host-errors.js";
import type { InternDirectory } from "./intern-directory.js";
import type { InternHostClient, InternHostClients } from "./intern-host-clients.js";

/** What the chat service is built from. */
export interface InternChatServiceOptions {
  /** Spans of this service's own work, under each call's span. */
  tracer: Tracer;
  interns: InternDirectory;
  hosts: InternHostClients;
  /** Turns per member. */
  limiter: RateLimiter;
  /** Silence after which a keepalive is sent (spec: 30 s). */
  heartbeatMs: number;
  /** Budget for the host to open the turn (504 `timeout` past it). */
  requestTimeoutMs: number;
  /** `<namespace>.provide_input` and `<namespace>/intern`. */
  namespace: string;
  /**
   * Aborted when a shutdown's grace period is over: open streams end with a
   * well-formed `stream_severed` ending instead of a cut connection.
   */
  drainSignal?: AbortSignal;
  /** Told how each relayed turn ended: its finish (`stop`, `tool_calls`, `error`) and the error's reason. */
  onTurnEnd?: (finish: string, reason: string) => void;
}

const keepalive = create(CreateChatCompletionResponseSchema, { event: { case: "keepalive", value: {} } });
// A shallow copy of one made message per chunk: create() walks the schema each time.
const responseTemplate = create(CreateChatCompletionResponseSchema);
const chunkEvent = (chunk: ChatCompletionChunk): CreateChatCompletionResponse => ({ ...responseTemplate, event: { case: "chunk", value: chunk } });

/** Opens the host stream for a turn: a new run or the answer to a question. */
function openHostStream(client: InternHostClient, turn: ChatTurn, hostToken: string, signal: AbortSignal, span: Span): AsyncIterator<{ event?: RunEvent }> {
  const headers: Record<string, string> = { authorization: `Bearer ${hostToken}` };
  // The host learns the trace it works for: its own spans (if it traces) join the caller's.
  injectTraceContext(span, headers);
  const options = { signal, headers };
  const stream =
    turn.kind === "prompt"
      ? client.startRun({ sessionId: turn.sessionId, prompt: turn.prompt, approvalMode: turn.approvalMode }, options)
      : client.answerInteraction({ sessionId: turn.sessionId, interactionId: turn.toolCallId, answer: turn.answer }, options);
  return stream[Symbol.asyncIterator]();
}

/**
 * Waits for the host to open the turn. Until then nothing is written, so a
 * failure here is a real refusal (an HTTP error on the JSON surface).
 */
async function firstEvent(events: AsyncIterator<{ event?: RunEvent }>, timeoutMs: number, abort: AbortController): Promise<RunEvent> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(catalogueError("timeout"));
    }, timeoutMs);
  });
  try {
    const result = await Promise.race([events.next(), timedOut]);
    if (result.done || !result.value.event) throw catalogueError("stream_severed", "The intern's stream ended before the turn started.");
    return result.value.event;
  } catch (error) {
    throw hostErrorToCallerError(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The caller's silence timer: one timer per stream, re-armed by each write
 * (a timer and a promise per event cost more than building the chunk).
 */
function createSilenceTimer(intervalMs: number) {
  let fired = false;
  let onSilence: (() => void) | undefined;
  const timer = setTimeout(() => {
    fired = true;
    onSilence?.();
  }, intervalMs);
  return {
    /**
     * Settles as `next` does, or with "tick" once the stream has been silent
     * for the interval. Each wait is a promise of its own: racing every event
     * against one long-lived promise would pile a reaction per event onto it.
     */
    race<T>(next: Promise<T>): Promise<T | "tick"> {
      if (fired) return Promise.resolve("tick");
      return new Promise<T | "tick">((resolve, reject) => {
        onSilence = () => resolve("tick");
        next.then(resolve, reject);
      });
    },
    /** Something was written: the silence starts again. */
    wrote() {
      timer.refresh();
      fired = false;
    },
    stop() {
      clearTimeout(timer);
      onSilence = undefined;
    },
  };
}

/**
 * Relays the host's run events as chunks, keeping the spec's order: role,
 * content/reasoning/interaction, one finish, the final chunk. A keepalive is
 * sent whenever nothing was written for the heartbeat interval.
 */
async function* relayRun(
  first: RunEvent,
  events: AsyncIterator<{ event?: RunEvent }>,
  chunks: ChunkBuilder,
  options: { heartbeatMs: number; signal: AbortSignal; drainSignal?: AbortSignal },
): AsyncGenerator<CreateChatCompletionResponse> {
  let sessionId = first.kind.case === "started" ? first.kind.value.sessionId : undefined;
  yield chunkEvent(chunks.role());
  const silence = createSilenceTimer(options.heartbeatMs);
  let pending: RunEvent | undefined = first;
  try {
    for (;;) {
      let event = pending;
      pending = undefined;
      if (!event) {
        let result: IteratorResult<{ event?: RunEvent }> | "tick";
        try {
          const next = events.next();
          for (;;) {
            result = await silence.race(next);
            if (result !== "tick") break;
            yield keepalive;
            silence.wrote();
          }
        } catch (error) {
          // A shutdown's drain aborted the host call: end the stream well-formed.
          if (options.drainSignal?.aborted && !options.signal.aborted) {
            yield chunkEvent(chunks.error(describeError(catalogueError("stream_severed", "The server is shutting down; the stream was closed."))));
            yield chunkEvent(chunks.final(sessionId, undefined));
            return;
          }
          // A caller that went away is promised no final event.
          if (options.signal.aborted) return;
          yield chunkEvent(chunks.error(describeError(hostStreamBreakToCallerError(error))));
          yield chunkEvent(chunks.final(sessionId, undefined));
          return;
        }
        if (result.done || !result.value.event) {
          yield chunkEvent(chunks.error(describeError(catalogueError("stream_severed"))));
          yield chunkEvent(chunks.final(sessionId, undefined));
          return;
        }
        event = result.value.event;
      }
      const kind = event.kind;
      switch (kind.case) {
        case "started":
          sessionId = kind.value.sessionId;
          continue;
        case "activity":
          continue;
        case "content":
          yield chunkEvent(chunks.content(kind.value));
          break;
        case "reasoning":
          yield chunkEvent(chunks.reasoning(kind.value));
          break;
        case "interaction":
          yield chunkEvent(chunks.interaction(kind.value.id, kind.value.arguments));
          break;
        case "paused":
          yield chunkEvent(chunks.finish("tool_calls"));
          yield chunkEvent(chunks.final(sessionId, undefined));
          return;
        case "finished":
          yield chunkEvent(chunks.finish("stop"));
          yield chunkEvent(chunks.final(sessionId, kind.value.usage, kind.value.model));
          return;
        case "failed":
          yield chunkEvent(chunks.error(describeError(catalogueErrorForReason(kind.value.reason, kind.value.message))));
          yield chunkEvent(chunks.final(sessionId, kind.value.usage));
          return;
        default:
          continue;
      }
      silence.wrote();
    }
  } finally {
    silence.stop();
  }
}

function isDeadline(reason: unknown): boolean {
  return reason instanceof ConnectError && reason.code === Code.DeadlineExceeded;
}

/** How a call that ended on the caller's side is refused: its deadline passed (`when`), or it went away. */
function callerEndError(signal: AbortSignal, when: string): ConnectError {
  return isDeadline(signal.reason) ? catalogueError("timeout", `The call's deadline passed ${when}.`) : catalogueError("client_closed_request");
}

/**
 * Host refusals that run no turn, so they do not count against the rate
 * limit: a client retrying a busy session every second, as Retry-After tells
 * it, would otherwise spend its whole budget. An unreachable host, a timeout
 * (the run may have begun) and a failed turn still count.
 */
const hostRefusalsBeforeTurn = new Set(["busy", "bad_request", "interaction_unknown", "interaction_not_pending", "attachment_failed"]);

/**
 * InternChatService: every rule of the intern chat route. The intern host
 * owns the run; this service checks the caller and the request, finds the
 * intern, and relays the run as chunks.
 */
export function createInternChatService(options: InternChatServiceOptions): ServiceImpl<typeof InternChatService> {
  return {
    async *createChatCompletion(request, context: HandlerContext) {
      const caller = callerOf(context);
      const turn = parseChatTurn(request);
      const intern = await options.interns.find(caller.orgId, turn.internId);
      if (!intern) throw catalogueError("not_found", `Intern ${shownId(turn.internId)} not found.`);
      if (intern.state !== "running") throw catalogueError("intern_not_ready", `The intern ${turn.internId} is ${intern.state}, not running.`);
      await options.limiter.consume(caller.memberId);

      // The host call ends when the caller goes away or a shutdown drains
      // open streams; both listeners are removed when the turn ends, so
      // nothing accumulates on the server-wide drain signal.
      const abort = new AbortController();
      const releaseHost = () => abort.abort();
      context.signal.addEventListener("abort", releaseHost, { once: true });
      options.drainSignal?.addEventListener("abort", releaseHost, { once: true });
      let terminated = false;
      const hostSpan = startChildSpan(options.tracer, callSpanOf(context), turn.kind === "prompt" ? "InternHostService/StartRun" : "InternHostService/AnswerInteraction", SpanKind.CLIENT, {
        "rpc.system": "grpc",
        "switchboard.intern_id": turn.internId,
      });
      let failure: unknown;
      try {
        const events = openHostStream(options.hosts.get(intern.endpoint), turn, intern.hostToken, abort.signal, hostSpan);
        const first = await firstEvent(events, options.requestTimeoutMs, abort).catch(async (error: unknown) => {
          if (hostRefusalsBeforeTurn.has(describeError(error).reason)) await options.limiter.refund(caller.memberId);
          if (options.drainSignal?.aborted) throw catalogueError("service_unavailable", "The server is shutting down; retry on another replica.");
          // The host call failed because the caller's own call ended; the intern refused nothing.
          throw context.signal.aborted ? callerEndError(context.signal, "before the intern answered") : error;
        });
        const chunks = createChunkBuilder({ model: turn.model ?? `${options.namespace}/intern`, toolName: `${options.namespace}.provide_input` });
        for await (const response of relayRun(first, events, chunks, { heartbeatMs: options.heartbeatMs, signal: context.signal, drainSignal: options.drainSignal })) {
          if (response.event.case === "chunk") {
            const chunk = response.event.value;
            noteGenerationId(context, chunk.id);
            const finish = chunk.choices[0]?.finishReason;
            if (finish) options.onTurnEnd?.(finish, chunk.error?.metadata?.reason ?? "");
            if (chunk.final) terminated = true;
          }
          yield response;
        }
        // The relay ends without the final chunk only when the caller's call
        // ended: its deadline (it is still there to be told) or it went away.
        if (!terminated && isDeadline(context.signal.reason)) throw callerEndError(context.signal, "before the run ended");
        if (!terminated) noteCallerLeft(context);
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        context.signal.removeEventListener("abort", releaseHost);
        options.drainSignal?.removeEventListener("abort", releaseHost);
        // Leaving before the run's terminal event (the caller went away, or
        // the stream broke) releases the host stream; the host cancels a run
        // whose reader leaves while it streams.
        if (!terminated) abort.abort();
        endSpan(hostSpan, failure);
      }
    },
  };
}
