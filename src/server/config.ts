import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { parseLogLevel } from "./logger.js";
import { parseSecretsKey } from "./secrets-key.js";

/** Everything `switchboard serve` reads from its environment, validated once. */
export interface ServerConfig {
  host: string;
  port: number;
  grpcPort: number;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  adminToken?: string;
  /** `SECRETS_KEY`: seals intern host tokens and webhook signing secrets (32 bytes); unset, see `resolveSecretsKey`. */
  secretsKey?: Buffer;
  logLevel: string;
  /** Bootstrap a development tenant even on PostgreSQL (`--bootstrap`). */
  bootstrap: boolean;
  /** How long open streams may finish after SIGTERM before they are cut. */
  shutdownGraceMs: number;
  /** Silence after which a chat stream sends `: keepalive`. */
  heartbeatMs: number;
  /** Chat turns per member per minute. */
  chatTurnsPerMinute: number;
  /** Budget for an intern host to accept a turn (504 `timeout` past it). */
  internRequestTimeoutMs: number;
  /** Agent-facing namespace: `<ns>.provide_input`, `<ns>/intern`. */
  namespace: string;
  /** Run the bundled demo intern host in process (embedded store only). */
  embeddedInternHost: boolean;
  /** Operator's models file (upstream speech and video models); unset, only the embedded models. */
  modelsFile?: string;
  /** Speech syntheses per member per minute. */
  speechRequestsPerMinute: number;
  /** Worker threads of the embedded speech engine: syntheses it runs at once. */
  speechWorkers: number;
  /** Video submissions per member per minute. */
  videoSubmitsPerMinute: number;
  /** A video job not finished this long after submission expires. */
  videoJobTtlSeconds: number;
  /** How long a video worker's hold on a job lasts unrenewed: a crashed replica's jobs resume after it. */
  videoJobLeaseSeconds: number;
  /** Video jobs run at once on this replica; 0: API only (it still sweeps and delivers webhooks). */
  videoWorkers: number;
  /** Deliver webhooks to private, loopback and link-local addresses too. */
  webhookAllowPrivate: boolean;
  /** PEM file of extra CAs trusted for webhook destinations (a private PKI). */
  webhookCaFile?: string;
  /** OpenTelemetry export, from the standard OTEL_* variables; unset, tracing is off. */
  tracing?: TracingConfig;
}

/** Where spans go (OTLP over HTTP) and the service name they carry. */
export interface TracingConfig {
  /** Full URL of the OTLP/HTTP traces endpoint (`…/v1/traces`). */
  tracesUrl: string;
  serviceName: string;
}

/**
 * Tracing is on when an OTLP endpoint is set, as the OpenTelemetry spec names
 * them: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
 * OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` appended); OTEL_SDK_DISABLED=true turns it off.
 */
function tracingConfig(env: NodeJS.ProcessEnv): TracingConfig | undefined {
  if (env.OTEL_SDK_DISABLED === "true") return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!traces && !base) return undefined;
  const tracesUrl = traces || `${base!.replace(/\/+$/, "")}/v1/traces`;
  if (!/^https?:\/\/[^\s]+$/.test(tracesUrl)) throw new Error("OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be http(s) URLs.");
  return { tracesUrl, serviceName: env.OTEL_SERVICE_NAME || "switchboard" };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}.`);
  return value;
}

/** A switch written `0` or `1`; anything else (`false`, `no`…) is refused rather than read as on. */
function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw !== "0" && raw !== "1") throw new Error(`${name} must be 0 or 1, got ${JSON.stringify(raw)}.`);
  return raw === "1";
}

/** Reads and validates the operator's environment (DESIGN §2). */
export function loadServerConfig(env: NodeJS.ProcessEnv = process.env, flags: { bootstrap?: boolean } = {}): ServerConfig {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new Error("DATABASE_URL must be a postgres:// URL.");
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new Error("REDIS_URL must be a redis:// URL.");
  const namespace = env.SWITCHBOARD_NAMESPACE || "service";
  if (!/^[a-z][a-z0-9_-]{0,31}$/.test(namespace)) throw new Error("SWITCHBOARD_NAMESPACE must be 1 to 32 lowercase letters, digits, '_' or '-'.");
  return {
    host: env.HOST || "127.0.0.1",
    port: integer(env, "PORT", 8080, 0, 65535),
    grpcPort: integer(env, "GRPC_PORT", 8081, 0, 65535),
    dataDir: resolve(env.DATA_DIR || "./data"),
    databaseUrl,
    redisUrl,
    adminToken: env.ADMIN_TOKEN || undefined,
    secretsKey: env.SECRETS_KEY ? parseSecretsKey(env.SECRETS_KEY, "SECRETS_KEY") : undefined,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    bootstrap: flags.bootstrap ?? false,
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    heartbeatMs: integer(env, "HEARTBEAT_MS", 30_000, 10, 600_000),
    chatTurnsPerMinute: integer(env, "CHAT_TURNS_PER_MINUTE", 60, 1, 1_000_000),
    internRequestTimeoutMs: integer(env, "INTERN_REQUEST_TIMEOUT_MS", 30_000, 100, 600_000),
    namespace,
    embeddedInternHost: flag(env, "EMBEDDED_INTERN_HOST", true),
    modelsFile: env.MODELS_FILE ? resolve(env.MODELS_FILE) : undefined,
    speechRequestsPerMinute: integer(env, "SPEECH_REQUESTS_PER_MINUTE", 120, 1, 1_000_000),
    speechWorkers: integer(env, "SPEECH_WORKERS", Math.min(2, availableParallelism()), 1, 64),
    ...videoConfig(env),
    tracing: tracingConfig(env),
  };
}

// pg-boss refuses job expiries of 24 h or more, and a run's expiry is the time to live plus a minute.
const maxVideoJobTtlSeconds = 23 * 3600;

function videoConfig(env: NodeJS.ProcessEnv) {
  const videoJobTtlSeconds = integer(env, "VIDEO_JOB_TTL_SECONDS", 3600, 2, maxVideoJobTtlSeconds);
  const videoJobLeaseSeconds = integer(env, "VIDEO_JOB_LEASE_SECONDS", 30, 1, 600);
  if (videoJobLeaseSeconds >= videoJobTtlSeconds) throw new Error("VIDEO_JOB_LEASE_SECONDS must be shorter than VIDEO_JOB_TTL_SECONDS.");
  return {
    videoSubmitsPerMinute: integer(env, "VIDEO_SUBMITS_PER_MINUTE", 60, 1, 1_000_000),
    videoJobTtlSeconds,
    videoJobLeaseSeconds,
    videoWorkers: integer(env, "VIDEO_WORKERS", 4, 0, 64),
    webhookAllowPrivate: flag(env, "WEBHOOK_ALLOW_PRIVATE", false),
    webhookCaFile: env.WEBHOOK_CA_FILE ? resolve(env.WEBHOOK_CA_FILE) : undefined,
  };
}
