import { randomUUID } from "node:crypto";
import type { ConnectError } from "@connectrpc/connect";
import { catalogueError, type ErrorName } from "../core/error-catalogue.js";
import type { RunEvent } from "../gen/switchboard/host/v1/host_pb.js";
import type { ChatUsage } from "../gen/switchboard/v1/chat_pb.js";
import type { ApprovalMode } from "./mode-preferences.js";
import { createRunLog, endsStream, type RunEventKind } from "./run-log.js";

/** A question the agent asked, as the run needs it: how to show, validate and answer it. */
export interface InteractionRequest<Response> {
  readonly kind: "permission" | "elicitation";
  /** The `arguments` object shown to the caller. */
  readonly arguments: object;
  /** Validates the caller's answer and builds the agent's response; throws `bad_request`. */
  resolve(answer: string): Response;
  /** The response that tells the agent its question was cancelled. */
  readonly cancelled: Response;
  /** Aborts when the agent withdraws the request (`$/cancel_request`). */
  readonly withdrawn: AbortSignal;
}

/** A question of a run, from the moment it is shown until it is settled. */
export interface Interaction {
  readonly id: string;
  readonly run: Run;
  readonly state: "queued" | "shown" | "answered" | "withdrawn" | "closed";
}

/** Options for {@link createRun}. */
export interface RunOptions {
  readonly sessionId: string;
  readonly approvalMode: ApprovalMode;
  readonly replayBytes: number;
  readonly interactionDeadlineMs: number;
  /** How long the agent may take to confirm a cancellation before the run ends without it. */
  readonly cancelGraceMs: number;
  /** Whether one more run may be held open across a question (`--max-paused-runs`). */
  mayPause(): boolean;
  /** Asks the agent to cancel the turn (`session/cancel`). */
  cancelTurn(): void;
  /** Told when the run ended without the agent confirming its cancellation: the agent may still be on the turn. */
  onCancelIgnored(): void;
  /** Lets the host index the question so an answer can find it. */
  onInteractionShown(interaction: Interaction): void;
  onEnded(run: Run): void;
  /** Told each time the run starts or stops waiting on a shown question, so the host counts paused runs without a scan. */
  onPausedChanged(paused: boolean): void;
  /**
   * Told how each question shown or queued ended: for metrics, and so the
   * host's index lets go of the run (and its retained output).
   */
  onInteractionEnded(interaction: Interaction, outcome: InteractionOutcome): void;
}

/** How a question ended: answered, its deadline passed, the agent withdrew it, or its run ended first. */
export type InteractionOutcome = "answered" | "expired" | "withdrawn" | "closed";

/**
 * One turn of an ACP session as the host owns it: its output log, its
 * questions (queued, shown one at a time, each with a deadline), its one
 * attached reader and its single terminal event.
 */
export interface Run {
  readonly id: string;
  readonly sessionId: string;
  readonly approvalMode: ApprovalMode;
  readonly ended: boolean;
  /** Waiting on a shown question: such a run lives on without a reader. */
  readonly paused: boolean;
  /** Cancellation was asked for (caller, deadline, reader gone, withdrawn question). */
  readonly cancelling: boolean;
  /** Bytes of output waiting for a reader; none once the run has ended with nobody left to read them. */
  readonly retainedBytes: number;
  /** Adds agent output (content, reasoning, tool activity). */
  append(kind: RunEventKind): void;
  /** The prompt is with the agent: the stream opens after a short grace even if no output comes. */
  promptSent(): void;
  /** Queues the agent's question; settles with the agent's response. */
  ask<Response>(request: InteractionRequest<Response>): Promise<Response>;
  /** The stream of the StartRun call that created the run, which is attached from the start. */
  firstStream(signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Answers the shown question and attaches the answering caller; throws catalogue errors before anything changes. */
  answer(interaction: Interaction, answer: string, signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Asks the agent to cancel; the run ends when the agent confirms, or after a grace period. */
  cancel(message: string): void;
  /** Ends the run from the prompt response. */
  finish(stopReason: string, usage: ChatUsage | undefined, model: string | undefined): void;
  /** Ends the run with a failure; before the stream opened, a refusal (`turn_failed`, `intern_rejected`) fails the call itself instead. */
  fail(name: ErrorName, message: string, usage?: ChatUsage): void;
}

/**
 * How long the agent may hold a prompt without output before the stream opens
 * anyway: refusals are nearly always immediate, and a gateway waits for the
 * stream to open within its request budget.
 */
const streamOpenGraceMs = 2_000;

/** The answer that cancels the run, whatever the question, instead of answering it. */
export const cancelAnswer = "cancel";

interface PendingInteraction extends Interaction {
  state: Interaction["state"];
  readonly request: InteractionRequest<unknown>;
  readonly arguments: string;
  respond(response: unknown): void;
  stopListening(): void;
}

/** Creates a run; its first reader (the StartRun caller) is attached at once. */
export function createRun(options: RunOptions): Run {
  const id = `run_${randomUUID()}`;
  const log = createRunLog({ capBytes: options.replayBytes, started: { sessionId: options.sessionId, runId: id } });
  const queue: PendingInteraction[] = [];
  let shown: PendingInteraction | undefined;
  let reportedPaused = false;
  let deadline: NodeJS.Timeout | undefined;
  let cancelGrace: NodeJS.Timeout | undefined;
  let openGrace: NodeJS.Timeout | undefined;
  let cancelMessage: string | undefined;
  let ended = false;
  let streamOpen = false;
  let reader: object | undefined = {};
  let refusal: ConnectError | undefined;
  let announceOpen: () => void = () => undefined;
  const streamOpens = new Promise<void>((resolve) => {
    announceOpen = resolve;
  });

  const run: Run = {
    id,
    sessionId: options.sessionId,
    approvalMode: options.approvalMode,
    get ended() {
      return ended;
    },
    get paused() {
      return !ended && shown !== undefined;
    },
    get cancelling() {
      return cancelMessage !== undefined;
    },
    get retainedBytes() {
      return log.waitingBytes;
    },
    append(kind) {
      if (ended) return;
      appendOutput(kind);
    },
    promptSent() {
      if (!ended && !streamOpen) openGrace = setTimeout(openStream, streamOpenGraceMs);
    },
    ask<Response>(request: InteractionRequest<Response>) {
      if (ended || cancelMessage !== undefined || request.withdrawn.aborted) return Promise.resolve(request.cancelled);
      return new Promise<Response>((resolve) => {
        const onWithdrawn = () => withdraw(interaction);
        const interaction: PendingInteraction = {
          id: `${request.kind === "permission" ? "perm" : "elicit"}_${randomUUID()}`,
          run,
          state: "queued",
          request,
          arguments: JSON.stringify(request.arguments),
          respond: (response) => resolve(response as Response),
          stopListening: () => request.withdrawn.removeEventListener("abort", onWithdrawn),
        };
        request.withdrawn.addEventListener("abort", onWithdrawn, { once: true });
        queue.push(interaction);
        if (!shown) showNext();
      });
    },
    firstStream(signal) {
      return stream(reader!, signal);
    },
    answer(interaction, answer, signal) {
      const pending = interaction as PendingInteraction;
      if (ended || pending !== shown) throw catalogueError("interaction_not_pending");
      const cancelling = answer.trim() === cancelAnswer;
      const response = cancelling ? pending.request.cancelled : pending.request.resolve(answer);
      if (log.overflowed) {
        run.cancel("The run produced more output than the intern retains.");
        end({ case: "failed", value: { reason: "attachment_expired", message: "The run produced more output than the intern retains, so the paused stream cannot be resumed." } });
        throw catalogueError("attachment_expired");
      }
      if (reader) throw catalogueError("attachment_conflict");
      const attached = {};
      reader = attached;
      show(undefined);
      clearTimeout(deadline);
      settle(pending, "answered", response);
      if (cancelling) run.cancel("The caller cancelled the run.");
      else showNext();
      return stream(attached, signal);
    },
    cancel(message) {
      if (ended || cancelMessage !== undefined) return;
      cancelMessage = message;
      closeQuestions();
      options.cancelTurn();
      cancelGrace = setTimeout(() => {
        run.fail("run_ended", message);
        options.onCancelIgnored();
      }, options.cancelGraceMs);
    },
    finish(stopReason, usage, model) {
      if (cancelMessage !== undefined) run.fail("run_ended", cancelMessage, usage);
      else if (stopReason === "cancelled") run.fail("run_ended", "The agent cancelled the turn.", usage);
      else end({ case: "finished", value: { stopReason, usage, model } });
    },
    fail(name, message, usage) {
      if (ended) return;
      if (!streamOpen && (name === "turn_failed" || name === "intern_rejected")) {
        refusal = catalogueError(name, message);
        end(undefined);
        return;
      }
      end({ case: "failed", value: { reason: name, message, usage } });
    },
  };

  function openStream(): void {
    if (streamOpen) return;
    streamOpen = true;
    clearTimeout(openGrace);
    announceOpen();
  }

  function appendOutput(kind: RunEventKind): void {
    openStream();
    if (log.append(kind) || !reader || log.streamEndWaiting) return;
    run.cancel("The reader fell behind the retained output.");
    end({ case: "failed", value: { reason: "attachment_expired", message: "The run produced more output than the intern retains." } });
  }

  /** Every change of the shown question goes through here, so the host hears of each change of `paused` once. */
  function show(interaction: PendingInteraction | undefined): void {
    shown = interaction;
    const paused = !ended && shown !== undefined;
    if (paused === reportedPaused) return;
    reportedPaused = paused;
    options.onPausedChanged(paused);
  }

  function showNext(): void {
    const next = queue.shift();
    if (!next) return;
    if (!options.mayPause()) {
      settle(next, "closed", next.request.cancelled);
      run.cancel("The intern cannot hold another run open across a question now.");
      end({ case: "failed", value: { reason: "host_busy", message: "The intern cannot hold another run open across a question now; retry later." } });
      return;
    }
    show(next);
    next.state = "shown";
    deadline = setTimeout(() => {
      if (shown !== next) return;
      show(undefined);
      settle(next, "closed", next.request.cancelled, "expired");
      run.cancel("The interaction deadline passed.");
    }, options.interactionDeadlineMs);
    options.onInteractionShown(next);
    appendOutput({ case: "interaction", value: { id: next.id, kind: next.request.kind, arguments: next.arguments } });
    if (!ended) appendOutput({ case: "paused", value: { interactionId: next.id } });
  }

  function withdraw(interaction: PendingInteraction): void {
    if (interaction.state === "queued") {
      queue.splice(queue.indexOf(interaction), 1);
      settle(interaction, "withdrawn", interaction.request.cancelled);
    } else if (interaction === shown) {
      show(undefined);
      clearTimeout(deadline);
      settle(interaction, "withdrawn", interaction.request.cancelled);
      // Nobody is attached to a paused run, so nobody could follow it past this point.
      run.cancel("The agent withdrew its question.");
    }
  }

  function settle(interaction: PendingInteraction, state: "answered" | "withdrawn" | "closed", response: unknown, outcome: InteractionOutcome = state): void {
    if (interaction.state !== "queued" && interaction.state !== "shown") return;
    interaction.state = state;
    options.onInteractionEnded(interaction, outcome);
    interaction.stopListening();
    interaction.respond(response);
  }

  function closeQuestions(): void {
    clearTimeout(deadline);
    if (shown) settle(shown, "closed", shown.request.cancelled);
    show(undefined);
    for (const queued of queue.splice(0)) settle(queued, "closed", queued.request.cancelled);
  }

  function end(terminal: RunEventKind | undefined): void {
    if (ended) return;
    ended = true;
    clearTimeout(cancelGrace);
    clearTimeout(openGrace);
    closeQuestions();
    if (terminal) {
      streamOpen = true;
      log.appendTerminal(terminal);
    }
    // The session keeps its last run until the next one: output nobody can
    // attach to any more (a question closed while no caller was reading) would
    // otherwise stay in memory until then, up to --replay-bytes per session.
    if (reader === undefined) log.discard();
    announceOpen();
    options.onEnded(run);
  }

  async function* stream(attached: object, signal: AbortSignal): AsyncGenerator<RunEvent> {
    try {
      await untilAborted(streamOpens, signal);
      if (refusal) throw refusal;
      yield log.started;
      for (;;) {
        const event = log.take();
        if (!event) {
          await log.changed(signal);
          continue;
        }
        if (endsStream(event)) {
          reader = undefined;
          yield event;
          return;
        }
        yield event;
      }
    } finally {
      if (reader === attached) {
        // Gone before it read the `paused` event that ends a stream (the question
        // itself may still be waiting in the log): nobody can answer, so the
        // run is cancelled like any stream its caller left.
        reader = undefined;
        if (!ended) run.cancel("The caller went away while the run was streaming.");
        else log.discard();
      }
    }
  }

  return run;
}

function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
