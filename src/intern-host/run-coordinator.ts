import * as acp from "@agentclientprotocol/sdk/unstable";
import { create } from "@bufbuild/protobuf";
import { catalogueError } from "../core/error-catalogue.js";
import {
  GetHostStatusResponseSchema,
  type AnswerInteractionRequest,
  type GetHostStatusResponse,
  type RunEvent,
  type StartRunRequest,
} from "../gen/switchboard/host/v1/host_pb.js";
import { createAgentProcess, type AgentClientHandlers, type AgentLink, type AgentProcess } from "./agent-process.js";
import { describeElicitation, parseElicitationAnswer } from "./elicitation-form.js";
import type { ResolvedHostOptions } from "./host-options.js";
import { chooseSessionMode, type ApprovalMode } from "./mode-preferences.js";
import { describePermission, selectPermissionOption, selfDriveOutcome } from "./permission-interaction.js";
import { createRun, type InteractionOutcome, type Run } from "./run.js";
import { createSessionTable, type HostSession } from "./session-table.js";
import type { HostUpdate } from "./session-update.js";
import { mapUsage } from "./usage.js";

/** The host's operations behind InternHostService, authentication aside. */
export interface RunCoordinator {
  /** Starts a run on a new or existing session and streams it; refusals before any output throw instead. */
  startRun(request: StartRunRequest, signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Answers the shown question of a paused run and streams the rest of it. */
  answerInteraction(request: AnswerInteractionRequest, signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Cancels the running or paused run of a session; nothing to cancel is not an error. */
  cancelRun(sessionId: string): void;
  /** The agent's state and the host's capacity, for GetHostStatus. */
  status(): GetHostStatusResponse;
  /** Starts the agent now rather than with the first run; rejects when it cannot start (it is retried with backoff). */
  startAgent(): Promise<void>;
  /** Ends every run (`run_ended`) and terminates the agent. */
  close(): Promise<void>;
}

const maxPromptCharacters = 32_000;
const maxSessionIdCharacters = 256;

/**
 * Creates the run coordinator: it supervises the agent, keeps the sessions,
 * starts runs, routes the agent's updates and questions into them, and
 * enforces one turn per session and the paused-run bound.
 */
export function createRunCoordinator(options: ResolvedHostOptions, observe: { onInteractionEnded?(outcome: InteractionOutcome): void } = {}): RunCoordinator {
  const { logger } = options;
  const sessions = createSessionTable(options.cwd);
  let closing = false;
  /** Sessions being opened or revived: a restart now would fail them. */
  let openings = 0;
  /** Sessions whose turn outlived its cancellation (`cancelIgnored`). */
  let ignoredTurns = 0;

  const handlers: AgentClientHandlers = {
    sessionUpdate(notification) {
      const session = sessions.get(notification.sessionId);
      if (session) applyUpdate(session, notification.update);
    },
    requestPermission(request, signal) {
      const cancelled: acp.RequestPermissionResponse = { outcome: { outcome: "cancelled" } };
      const session = sessions.get(request.sessionId);
      const run = sessions.liveRun(session);
      if (!session || !run) return Promise.resolve(cancelled);
      if (run.approvalMode === "self-drive") {
        const approval = selfDriveOutcome(request);
        if (approval) return Promise.resolve(approval);
      }
      return run.ask({
        kind: "permission",
        arguments: describePermission(request, session.toolTitles.get(request.toolCall.toolCallId)),
        resolve: (answer) => selectPermissionOption(request, answer),
        cancelled,
        withdrawn: withdrawalOf(signal),
      });
    },
    createElicitation(request, signal) {
      const sessionId = "sessionId" in request && typeof request.sessionId === "string" ? request.sessionId : undefined;
      const run = sessions.liveRun(sessionId === undefined ? undefined : sessions.get(sessionId));
      const schema = request.mode === "form" ? (request as acp.ElicitationFormMode).requestedSchema : undefined;
      // Only session-scoped forms can be put to a caller; URL mode was not advertised.
      if (!run || !schema) return Promise.resolve<acp.CreateElicitationResponse>({ action: "decline" });
      return run.ask<acp.CreateElicitationResponse>({
        kind: "elicitation",
        arguments: describeElicitation(request.message, schema),
        resolve: (answer) => parseElicitationAnswer(answer, schema),
        cancelled: { action: "cancel" },
        withdrawn: withdrawalOf(signal),
      });
    },
  };

  const agent: AgentProcess = createAgentProcess({ command: options.agent, cwd: options.cwd, env: options.agentEnv, handlers, logger });

  function applyUpdate(session: HostSession, update: HostUpdate): void {
    const run = sessions.liveRun(session);
    switch (update.kind) {
      case "content":
      case "reasoning":
        if (update.text !== "") run?.append({ case: update.kind, value: update.text });
        return;
      case "tool_call":
        session.toolTitles.set(update.toolCallId, update.title);
        run?.append({ case: "activity", value: { toolCallId: update.toolCallId, title: update.title, status: update.status } });
        return;
      case "tool_call_update": {
        if (update.title) session.toolTitles.set(update.toolCallId, update.title);
        const title = session.toolTitles.get(update.toolCallId) ?? "";
        run?.append({ case: "activity", value: { toolCallId: update.toolCallId, title, status: update.status } });
        return;
      }
      case "mode":
        if (session.modes) session.modes = { ...session.modes, currentModeId: update.currentModeId };
        return;
      case "model":
        session.model = update.model ?? session.model;
        return;
      case "cost":
        session.costUsd = update.usd;
        return;
      case "ignored":
        return;
    }
  }

  async function driveTurn(session: HostSession, run: Run, link: AgentLink, prompt: string, baselineCostUsd: number | undefined): Promise<void> {
    try {
      const modeId = chooseSessionMode(session.modes, run.approvalMode, options.modePreferences);
      if (modeId !== undefined) {
        await link.agent.request(acp.methods.agent.session.setMode, { sessionId: session.id, modeId });
        if (session.modes) session.modes = { ...session.modes, currentModeId: modeId };
      }
      if (run.cancelling) {
        run.finish("cancelled", undefined, undefined);
        return;
      }
      const prompted = link.agent.request(acp.methods.agent.session.prompt, { sessionId: session.id, prompt: [{ type: "text", text: prompt }] });
      run.promptSent();
      const response = await prompted;
      const costUsd = session.costUsd !== undefined && baselineCostUsd !== undefined ? roundUsd(session.costUsd - baselineCostUsd) : undefined;
      run.finish(response.stopReason, mapUsage(response.usage, costUsd), session.model);
    } catch (error) {
      if (link.signal.aborted) run.fail("turn_failed", "The agent exited during the turn.");
      else if (run.cancelling) run.finish("cancelled", undefined, undefined);
      else run.fail("turn_failed", `The agent failed the turn: ${messageOf(error)}`);
    } finally {
      session.turnInFlight = false;
      session.toolTitles.clear();
      if (session.cancelIgnored) {
        session.cancelIgnored = false;
        ignoredTurns--;
      }
      restartIfOnlyIgnoredTurns();
    }
  }

  /**
   * A turn whose `session/cancel` the agent ignored keeps its session busy:
   * ACP updates carry no turn id, so a new prompt on it would mix the old
   * turn's late output into the new one. Only a new agent frees it. The
   * restart waits until every turn in flight is such a turn, so it never
   * cuts short a turn that is still serving a caller; sessions then continue
   * on the new agent with resume or load, as after a crash.
   */
  function restartIfOnlyIgnoredTurns(): void {
    if (ignoredTurns === 0 || openings > 0) return;
    const link = agent.current();
    if (!link) return;
    // Turns of an agent already gone drain by themselves; only this agent's count.
    let ignoredHere = 0;
    for (const session of sessions.all()) {
      if (!session.turnInFlight || session.generation !== link.generation) continue;
      if (!session.cancelIgnored) return;
      ignoredHere++;
    }
    if (ignoredHere > 0) agent.restart(`the agent ignored session/cancel on ${ignoredHere} session(s)`);
  }

  function noteCancelIgnored(session: HostSession): void {
    if (!session.turnInFlight || session.cancelIgnored) return;
    session.cancelIgnored = true;
    ignoredTurns++;
    logger.warn({ sessionId: session.id }, "the agent did not confirm session/cancel in time; the session stays busy until it does or the agent restarts");
    restartIfOnlyIgnoredTurns();
  }

  /** Opens or revives the session of a StartRun, holding off a restart meanwhile. */
  async function openSession(request: StartRunRequest, link: AgentLink): Promise<HostSession> {
    openings++;
    try {
      return request.sessionId === undefined ? await sessions.openNewSession(link) : await sessions.reserveSession(request.sessionId, link);
    } finally {
      openings--;
    }
  }

  async function* startRun(request: StartRunRequest, signal: AbortSignal): AsyncGenerator<RunEvent> {
    const approvalMode = parseApprovalMode(request.approvalMode);
    if ([...request.prompt].length > maxPromptCharacters) throw catalogueError("bad_request", `The prompt must be at most ${maxPromptCharacters} characters.`);
    if (request.sessionId !== undefined && (request.sessionId.length === 0 || request.sessionId.length > maxSessionIdCharacters)) {
      throw catalogueError("bad_request", `session_id must be 1 to ${maxSessionIdCharacters} characters.`);
    }
    if (closing) throw catalogueError("turn_failed", "The intern host is shutting down.");
    let link: AgentLink;
    try {
      link = await agent.ready();
    } catch (error) {
      throw catalogueError("turn_failed", `The agent is not available: ${messageOf(error)}`);
    }
    if (request.sessionId !== undefined) {
      const known = sessions.get(request.sessionId);
      if (known && sessions.isBusy(known)) throw catalogueError("session_busy", undefined, { retryAfterSeconds: 1 });
    }
    if (sessions.pausedRuns() >= options.maxPausedRuns) throw catalogueError("host_busy", undefined, { retryAfterSeconds: 5 });
    let session: HostSession;
    try {
      session = await openSession(request, link);
    } catch (error) {
      restartIfOnlyIgnoredTurns();
      throw error;
    }
    let run: Run;
    try {
      if (signal.aborted) throw catalogueError("client_closed_request");
      run = createRun({
        sessionId: session.id,
        approvalMode,
        replayBytes: options.replayBytes,
        interactionDeadlineMs: options.interactionDeadlineMs,
        cancelGraceMs: options.cancelGraceMs,
        mayPause: () => sessions.pausedRuns() < options.maxPausedRuns,
        cancelTurn: () => void link.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.id }).catch(() => undefined),
        onCancelIgnored: () => noteCancelIgnored(session),
        onInteractionShown: (interaction) => sessions.rememberInteraction(session, interaction),
        onPausedChanged: (paused) => sessions.notePaused(paused),
        onEnded: (ended) => logger.info({ sessionId: session.id, runId: ended.id }, "run ended"),
        onInteractionEnded: (interaction, outcome) => {
          sessions.settleInteraction(session, interaction);
          observe.onInteractionEnded?.(outcome);
        },
      });
      session.run = run;
      session.turnInFlight = true;
    } finally {
      session.opening = false;
      restartIfOnlyIgnoredTurns();
    }
    logger.info({ sessionId: session.id, runId: run.id, approvalMode }, "run started");
    const baselineCostUsd = session.costUsd ?? (request.sessionId === undefined ? 0 : undefined);
    void driveTurn(session, run, link, request.prompt, baselineCostUsd);
    yield* run.firstStream(signal);
  }

  async function* answerInteraction(request: AnswerInteractionRequest, signal: AbortSignal): AsyncGenerator<RunEvent> {
    const interaction = sessions.get(request.sessionId)?.interactions.get(request.interactionId);
    if (!interaction) throw catalogueError("interaction_unknown");
    if (!interaction.run) throw catalogueError("interaction_not_pending");
    yield* interaction.run.answer(interaction, request.answer, signal);
  }

  return {
    startRun,
    answerInteraction,
    cancelRun(sessionId) {
      const session = sessions.get(sessionId);
      if (!session) throw catalogueError("not_found", "No session has this id on this intern.");
      sessions.liveRun(session)?.cancel("The caller cancelled the run.");
    },
    status() {
      const info = agent.current()?.info.agentInfo;
      return create(GetHostStatusResponseSchema, {
        agentReady: agent.current() !== undefined,
        agentName: info?.name ?? "",
        agentVersion: info?.version ?? "",
        activeRuns: sessions.activeRuns(),
        pausedRuns: sessions.pausedRuns(),
        maxPausedRuns: options.maxPausedRuns,
      });
    },
    async startAgent() {
      await agent.ready();
    },
    async close() {
      closing = true;
      for (const session of sessions.all()) {
        const run = sessions.liveRun(session);
        run?.cancel("The intern host is shutting down.");
        run?.fail("run_ended", "The intern host is shutting down.");
      }
      await agent.close();
    },
  };
}

function parseApprovalMode(value: string): ApprovalMode {
  if (value === "" || value === "self-drive") return "self-drive";
  if (value === "manual") return "manual";
  throw catalogueError("bad_request", 'approval_mode must be "manual" or "self-drive".');
}

/** Only a `$/cancel_request` withdraws a question; a closed connection fails the turn instead. */
function withdrawalOf(signal: AbortSignal): AbortSignal {
  const withdrawal = new AbortController();
  signal.addEventListener(
    "abort",
    () => {
      if (signal.reason instanceof acp.RequestError && signal.reason.code === -32800) withdrawal.abort(signal.reason);
    },
    { once: true },
  );
  return withdrawal.signal;
}

function roundUsd(amount: number): number {
  return Math.round(amount * 1e10) / 1e10;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
