import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { Registry } from "prom-client";
import { z } from "zod";
import { defaultModePreferences, type ModePreferences } from "./mode-preferences.js";

/** The subset of a pino logger the host writes to, so pino or any look-alike fits. */
export interface HostLogger {
  debug(fields: object, message?: string): void;
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
}

/** What a host needs besides a listener: also what the gateway passes to embed one in-process. */
export interface InternHostRoutesOptions {
  /** The intern's host token; every call must carry `authorization: Bearer <token>`. */
  token: string;
  /** The agent's command line (`--agent`), split shell-like and spawned without a shell. */
  agent: string;
  /** Working directory of the agent and of its sessions (`--cwd`); default: the host's. */
  cwd?: string;
  /** The agent's whole environment; default: the host's own (an agent usually needs its API keys from there). */
  agentEnv?: NodeJS.ProcessEnv;
  /** Seconds a shown question waits for its answer before the run is cancelled (`--interaction-deadline`); default 300. */
  interactionDeadlineSeconds?: number;
  /** Bytes of undelivered output a run retains (`--replay-bytes`); default 1 MiB. */
  replayBytes?: number;
  /** Runs the host holds open across a question at once (`--max-paused-runs`); default 32. */
  maxPausedRuns?: number;
  /** Seconds the agent may take to confirm a `session/cancel` before the host ends the run itself; default 10. */
  cancelGraceSeconds?: number;
  /** ACP mode ids to prefer per approval mode, replacing the defaults of that mode. */
  modePreferences?: { selfDrive?: readonly string[]; manual?: readonly string[] };
  logger?: HostLogger;
  /** Registers the host's metrics here (prom-client); the gateway passes its own for the embedded host. */
  metricsRegistry?: Registry;
}

/** The options after defaults and validation, read once and passed down. */
export interface ResolvedHostOptions {
  readonly token: string;
  readonly agent: string;
  readonly cwd: string;
  readonly agentEnv: NodeJS.ProcessEnv | undefined;
  readonly interactionDeadlineMs: number;
  readonly replayBytes: number;
  readonly maxPausedRuns: number;
  readonly cancelGraceMs: number;
  readonly modePreferences: ModePreferences;
  readonly logger: HostLogger;
}

/**
 * Defaults of the host's limits. 1 MiB of replay matches the public request
 * body cap and holds minutes of streamed text; 32 paused runs keeps a
 * forgotten-question backlog bounded on a single machine.
 */
export const hostDefaults = {
  interactionDeadlineSeconds: 300,
  replayBytes: 1_048_576,
  maxPausedRuns: 32,
  cancelGraceSeconds: 10,
} as const;

const modeList = z.array(z.string().min(1)).min(1).readonly();

const optionsSchema = z.object({
  token: z.string().min(1, "The host token must not be empty."),
  agent: z.string().trim().min(1, "The agent command line must not be empty."),
  cwd: z.string().min(1).optional(),
  interactionDeadlineSeconds: z.number().positive().max(86_400).default(hostDefaults.interactionDeadlineSeconds),
  replayBytes: z.number().int().positive().default(hostDefaults.replayBytes),
  maxPausedRuns: z.number().int().nonnegative().default(hostDefaults.maxPausedRuns),
  cancelGraceSeconds: z.number().positive().max(3_600).default(hostDefaults.cancelGraceSeconds),
  modePreferences: z.object({ selfDrive: modeList.optional(), manual: modeList.optional() }).optional(),
});

const silentLogger: HostLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** Validates the host options once and fills in the defaults; throws on a bad value. */
export function resolveHostOptions(options: InternHostRoutesOptions): ResolvedHostOptions {
  const result = optionsSchema.safeParse(options);
  if (!result.success) throw new Error(`Invalid intern host options:\n${z.prettifyError(result.error)}`);
  const parsed = result.data;
  const cwd = parsed.cwd === undefined ? process.cwd() : isAbsolute(parsed.cwd) ? parsed.cwd : resolve(parsed.cwd);
  // Spawning in a missing directory fails as "spawn node ENOENT", blaming the program.
  if (!statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`Invalid intern host options: the agent's working directory ${cwd} is not a directory.`);
  return {
    token: parsed.token,
    agent: parsed.agent,
    cwd,
    agentEnv: options.agentEnv,
    interactionDeadlineMs: Math.round(parsed.interactionDeadlineSeconds * 1000),
    replayBytes: parsed.replayBytes,
    maxPausedRuns: parsed.maxPausedRuns,
    cancelGraceMs: Math.round(parsed.cancelGraceSeconds * 1000),
    modePreferences: {
      selfDrive: parsed.modePreferences?.selfDrive ?? defaultModePreferences.selfDrive,
      manual: parsed.modePreferences?.manual ?? defaultModePreferences.manual,
    },
    logger: options.logger ?? silentLogger,
  };
}
