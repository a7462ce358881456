import { spawn, type ChildProcess } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { createAgentStdioStream, localSessionUpdate } from "./agent-stdio-stream.js";
import { splitCommandLine } from "./command-line.js";
import type { HostLogger } from "./host-options.js";
import { readSessionNotification, type HostSessionNotification } from "./session-update.js";

/**
 * What the host does with the agent's requests and notifications. The agent
 * process only carries them; runs, interactions and sessions live elsewhere.
 */
export interface AgentClientHandlers {
  sessionUpdate(notification: HostSessionNotification): void;
  requestPermission(request: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse>;
  createElicitation(request: acp.CreateElicitationRequest, signal: AbortSignal): Promise<acp.CreateElicitationResponse>;
}

/** Options for {@link createAgentProcess}. */
export interface AgentProcessOptions {
  /** The operator's `--agent` command line, split shell-like, spawned without a shell. */
  readonly command: string;
  readonly cwd: string;
  /** The agent's environment; undefined: the host's. */
  readonly env?: NodeJS.ProcessEnv;
  readonly handlers: AgentClientHandlers;
  readonly logger: HostLogger;
}

/** One initialized incarnation of the agent. */
export interface AgentLink {
  /** Increases with every restart; sessions remember the generation they live on. */
  readonly generation: number;
  readonly agent: acp.ClientContext;
  readonly info: acp.InitializeResponse;
  /** Aborts when this incarnation's connection closes (the agent exited or broke the protocol). */
  readonly signal: AbortSignal;
}

/** The supervised agent: spawned on demand, restarted with backoff after it exits. */
export interface AgentProcess {
  /** The current link, starting the agent now if it is down (even mid-backoff); rejects when the start fails. */
  ready(): Promise<AgentLink>;
  /** The current link when the agent is up and initialized. */
  current(): AgentLink | undefined;
  /**
   * Terminates the current incarnation (SIGTERM, then SIGKILL) and hands out
   * no more of it; the supervisor starts the next one as after any exit.
   */
  restart(reason: string): void;
  /** Stops restarting and terminates the agent. */
  close(): Promise<void>;
}

const firstBackoffMs = 250;
const maxBackoffMs = 30_000;
/** An incarnation that lived this long was healthy: the next crash restarts quickly again. */
const healthyUptimeMs = 30_000;
const killGraceMs = 2_000;
/** Agents started through npx may install themselves first. */
const initializeTimeoutMs = 60_000;

/**
 * Creates the supervisor of the agent process. It speaks ACP v1 over stdio
 * with the official SDK (unstable entry point, so `PromptResponse.usage`
 * survives parsing), initializes with form elicitation and no fs or terminal
 * capability, and restarts the agent after every exit with exponential
 * backoff (250 ms doubling to 30 s, reset after 30 s of health).
 */
export function createAgentProcess(options: AgentProcessOptions): AgentProcess {
  const argv = splitCommandLine(options.command);
  if (argv.length === 0) throw new Error("The agent command line is empty.");
  const { logger } = options;
  let generation = 0;
  let link: AgentLink | undefined;
  let starting: Promise<AgentLink> | undefined;
  let child: ChildProcess | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let backoffMs = firstBackoffMs;
  let closed = false;

  const client = acp
    .client({ name: "switchboard-intern-host" })
    .onNotification(localSessionUpdate, readSessionNotification, ({ params }) => options.handlers.sessionUpdate(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => options.handlers.requestPermission(params, signal))
    .onRequest(acp.methods.client.elicitation.create, ({ params, signal }) => options.handlers.createElicitation(params, signal));

  function start(): Promise<AgentLink> {
    if (restartTimer) clearTimeout(restartTimer);
    restartTimer = undefined;
    starting ??= launch().finally(() => {
      starting = undefined;
    });
    return starting;
  }

  async function launch(): Promise<AgentLink> {
    const thisGeneration = ++generation;
    const startedAt = Date.now();
    // The agent's stderr is the host's, as under any process supervisor: it may
    // hold prompts and code, which the host's own log never carries.
    const agentChild = spawn(argv[0], argv.slice(1), { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "inherit"] });
    child = agentChild;
    const exited = new Promise<void>((resolve) => {
      agentChild.once("exit", (code, signal) => {
        logger.warn({ generation: thisGeneration, code, signal }, "agent exited");
        resolve();
      });
      agentChild.once("error", (error) => {
        logger.error({ generation: thisGeneration, err: error.message }, "agent could not be spawned");
        resolve();
      });
    }).then(() => {
      if (child === agentChild) child = undefined;
    });
    // Writes after the agent died surface here; the exit path handles the consequences.
    agentChild.stdin!.on("error", () => undefined);
    const stream = createAgentStdioStream(agentChild.stdout!, agentChild.stdin!, {
      onInvalidLine: (line) => logger.warn({ generation: thisGeneration, characters: line.length }, "agent wrote a line to stdout that is not JSON-RPC; skipped"),
    });
    const connection = client.connect(stream);
    void exited.then(() => connection.close());
    void connection.closed.then(() => {
      if (isRunning(agentChild)) agentChild.kill("SIGKILL");
      void exited.then(() => afterExit(thisGeneration, startedAt));
    });

    try {
      const info = await withTimeout(
        connection.agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {} } },
          clientInfo: { name: "switchboard-intern-host", version: "1" },
        }),
        initializeTimeoutMs,
        "The agent did not answer initialize in time.",
      );
      if (info.protocolVersion !== acp.PROTOCOL_VERSION) throw new Error(`The agent speaks ACP version ${info.protocolVersion}, not ${acp.PROTOCOL_VERSION}.`);
      if (closed) throw new Error("The intern host is closing.");
      link = { generation: thisGeneration, agent: connection.agent, info, signal: connection.signal };
      logger.info({ generation: thisGeneration, agent: info.agentInfo?.name, version: info.agentInfo?.version }, "agent ready");
      return link;
    } catch (error) {
      connection.close(error);
      throw error;
    }
  }

  function afterExit(exitedGeneration: number, startedAt: number): void {
    if (link?.generation === exitedGeneration) link = undefined;
    if (closed || exitedGeneration !== generation) return;
    if (Date.now() - startedAt >= healthyUptimeMs) backoffMs = firstBackoffMs;
    const delay = backoffMs;
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      start().catch((error: unknown) => logger.error({ err: String(error) }, "agent restart failed"));
    }, delay);
  }

  return {
    ready() {
      if (closed) return Promise.reject(new Error("The intern host is closing."));
      return link && !link.signal.aborted ? Promise.resolve(link) : start();
    },
    current() {
      return link && !link.signal.aborted ? link : undefined;
    },
    restart(reason) {
      const running = child;
      if (!running || !isRunning(running)) return;
      logger.warn({ generation, reason }, "restarting the agent");
      link = undefined;
      terminate(running);
    },
    async close() {
      closed = true;
      if (restartTimer) clearTimeout(restartTimer);
      restartTimer = undefined;
      const running = child;
      link = undefined;
      if (!running || !isRunning(running)) return;
      await terminate(running);
    },
  };
}

/** SIGTERM, then SIGKILL if the agent is still there after a grace period; settles when it exited. */
function terminate(running: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
  running.kill("SIGTERM");
  const force = setTimeout(() => running.kill("SIGKILL"), killGraceMs);
  return exited.finally(() => clearTimeout(force));
}

function isRunning(agentChild: ChildProcess): boolean {
  return agentChild.pid !== undefined && agentChild.exitCode === null && agentChild.signalCode === null;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
