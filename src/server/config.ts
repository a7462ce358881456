import { resolve } from "node:path";

/** Everything `switchboard serve` reads from its environment, validated once. */
export interface ServerConfig {
  host: string;
  port: number;
  grpcPort: number;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  adminToken?: string;
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
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}.`);
  return value;
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
    logLevel: env.LOG_LEVEL || "info",
    bootstrap: flags.bootstrap ?? false,
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    heartbeatMs: integer(env, "HEARTBEAT_MS", 30_000, 10, 600_000),
    chatTurnsPerMinute: integer(env, "CHAT_TURNS_PER_MINUTE", 60, 1, 1_000_000),
    internRequestTimeoutMs: integer(env, "INTERN_REQUEST_TIMEOUT_MS", 30_000, 100, 600_000),
    namespace,
    embeddedInternHost: (env.EMBEDDED_INTERN_HOST ?? "1") !== "0",
  };
}
