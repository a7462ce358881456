import * as acp from "@agentclientprotocol/sdk/unstable";
import { catalogueError } from "../core/error-catalogue.js";
import type { AgentLink } from "./agent-process.js";
import type { Interaction, Run } from "./run.js";
import { reportedModel } from "./session-update.js";

/** What the host remembers of one ACP session. */
export interface HostSession {
  readonly id: string;
  /** The agent incarnation the session is live on; another one must resume or load it first. */
  generation: number;
  modes: acp.SessionModeState | undefined;
  model: string | undefined;
  /** The session's cumulative cost in USD from `usage_update`, once reported. */
  costUsd: number | undefined;
  /** The current run, or the last one while its turn drains. */
  run: Run | undefined;
  /** A StartRun is setting the session up. */
  opening: boolean;
  /** `session/prompt` is outstanding, even after the run was ended by the host. */
  turnInFlight: boolean;
  /** The run was ended after the agent ignored its `session/cancel`, and `session/prompt` is still outstanding. */
  cancelIgnored: boolean;
  /** Titles of the turn's tool calls, for permission requests that carry none. */
  readonly toolTitles: Map<string, string>;
  /** Shown questions, settled ones included (by id and state only), so late answers get `interaction_not_pending`. */
  readonly interactions: Map<string, Interaction | SettledInteraction>;
}

/** A question no longer waiting: what a late answer needs to hear `interaction_not_pending`, without its run. */
export interface SettledInteraction {
  readonly id: string;
  readonly state: "answered" | "withdrawn" | "closed";
  readonly run?: undefined;
}

/** Idle sessions beyond this are forgotten (the agent may still resume them on demand); busy ones never are. */
const maxSessions = 1024;
/** Settled questions remembered per session. */
const maxInteractionHistory = 256;

/** The sessions a host knows, and the one way in to each of them. */
export interface SessionTable {
  /** The session with this id, when the host knows it. */
  get(sessionId: string): HostSession | undefined;
  /** The session's run while it has not ended. */
  liveRun(session: HostSession | undefined): Run | undefined;
  /** A turn is being set up, runs, or drains: a new prompt must wait. */
  isBusy(session: HostSession): boolean;
  /** Runs waiting on a shown question. */
  pausedRuns(): number;
  /** A run started (`true`) or stopped (`false`) waiting on a shown question; kept as a count, as a turn asks on every start. */
  notePaused(paused: boolean): void;
  /** Runs that have not ended, paused ones included. */
  activeRuns(): number;
  /** Opens a new ACP session (left `opening` for the caller to release, as `reserveSession` does); an agent that refuses is `intern_rejected`. */
  openNewSession(link: AgentLink): Promise<HostSession>;
  /** Reserves a session the caller names (left `opening` for the caller to release), reviving it on the current agent when needed. */
  reserveSession(sessionId: string, link: AgentLink): Promise<HostSession>;
  /** Indexes a shown question so an answer can find it, forgetting the oldest settled ones. */
  rememberInteraction(session: HostSession, interaction: Interaction): void;
  /** Keeps a settled question by id and state only (call it once settled): a run's retained output must not live on in the history. */
  settleInteraction(session: HostSession, interaction: Interaction): void;
  /** Every session, for shutdown. */
  all(): Iterable<HostSession>;
}

/**
 * Creates the session table: which ACP sessions exist, on which agent
 * incarnation each one lives, their modes, model and cost, their current run
 * and the questions they showed.
 */
export function createSessionTable(cwd: string): SessionTable {
  const sessions = new Map<string, HostSession>();
  let pausedRuns = 0;

  function liveRun(session: HostSession | undefined): Run | undefined {
    return session?.run && !session.run.ended ? session.run : undefined;
  }

  function isBusy(session: HostSession): boolean {
    return session.opening || session.turnInFlight || liveRun(session) !== undefined;
  }

  function activeRuns(): number {
    let count = 0;
    for (const session of sessions.values()) if (liveRun(session)) count++;
    return count;
  }

  function remember(id: string, generation: number): HostSession {
    const session: HostSession = {
      id,
      generation,
      modes: undefined,
      model: undefined,
      costUsd: undefined,
      run: undefined,
      opening: false,
      turnInFlight: false,
      cancelIgnored: false,
      toolTitles: new Map(),
      interactions: new Map(),
    };
    sessions.set(id, session);
    // Forget the oldest idle session, never the one being added (it is not
    // busy yet): with every other session busy the table grows past the cap,
    // since a busy session cannot be forgotten.
    if (sessions.size > maxSessions) {
      for (const [oldId, old] of sessions) {
        if (oldId !== id && !isBusy(old)) {
          sessions.delete(oldId);
          break;
        }
      }
    }
    return session;
  }

  function adopt(session: HostSession, state: { modes?: acp.SessionModeState | null; configOptions?: acp.SessionConfigOption[] | null }): void {
    session.modes = state.modes ?? session.modes;
    session.model = reportedModel(state.configOptions) ?? session.model;
  }

  async function openNewSession(link: AgentLink): Promise<HostSession> {
    let created: acp.NewSessionResponse;
    try {
      created = await link.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    } catch (error) {
      // An agent that died meanwhile did not refuse: the turn failed, and a retry meets the restarted agent.
      if (link.signal.aborted) throw catalogueError("turn_failed", "The agent exited while opening a session.");
      throw catalogueError("intern_rejected", `The agent refused to open a session: ${messageOf(error)}`);
    }
    const session = remember(created.sessionId, link.generation);
    // Busy from the start: until its run is set up, the table must not forget it for an idle one.
    session.opening = true;
    adopt(session, created);
    return session;
  }

  /** Brings a session the current agent does not know (restart, or forgotten by the host) back with resume, else load. */
  async function revive(session: HostSession, link: AgentLink): Promise<void> {
    const capabilities = link.info.agentCapabilities;
    const request = { sessionId: session.id, cwd, mcpServers: [] };
    try {
      if (capabilities?.sessionCapabilities?.resume) adopt(session, await link.agent.request(acp.methods.agent.session.resume, request));
      else if (capabilities?.loadSession) adopt(session, (await link.agent.request(acp.methods.agent.session.load, request)) ?? {});
      else throw new Error("the agent can neither resume nor load sessions");
    } catch (error) {
      if (link.signal.aborted) throw catalogueError("turn_failed", "The agent exited while continuing the session.");
      throw catalogueError("not_found", `The session could not be continued: ${messageOf(error)}.`);
    }
    session.generation = link.generation;
  }

  /** Reserves a session the caller names (left `opening` for the caller to release), reviving it on the current agent when needed. */
  async function reserveSession(sessionId: string, link: AgentLink): Promise<HostSession> {
    const known = sessions.get(sessionId);
    if (known && isBusy(known)) throw catalogueError("session_busy", undefined, { retryAfterSeconds: 1 });
    const session = known ?? remember(sessionId, -1);
    session.opening = true;
    try {
      if (session.generation !== link.generation) await revive(session, link);
      return session;
    } catch (error) {
      session.opening = false;
      if (!known) sessions.delete(sessionId);
      throw error;
    }
  }

  function rememberInteraction(session: HostSession, interaction: Interaction): void {
    session.interactions.set(interaction.id, interaction);
    if (session.interactions.size <= maxInteractionHistory) return;
    for (const [id, old] of session.interactions) {
      if (old.state !== "shown") {
        session.interactions.delete(id);
        return;
      }
    }
  }

  function settleInteraction(session: HostSession, interaction: Interaction): void {
    // Only shown questions were remembered; a queued one never was.
    if (session.interactions.get(interaction.id) !== interaction) return;
    session.interactions.set(interaction.id, { id: interaction.id, state: interaction.state as SettledInteraction["state"] });
  }

  return {
    get: (sessionId) => sessions.get(sessionId),
    liveRun,
    isBusy,
    pausedRuns: () => pausedRuns,
    notePaused(paused) {
      pausedRuns += paused ? 1 : -1;
    },
    activeRuns,
    openNewSession,
    reserveSession,
    rememberInteraction,
    settleInteraction,
    all: () => sessions.values(),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
