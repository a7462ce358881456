import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { pino } from "pino";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../src/gen/switchboard/admin/v1/admin_pb.js";
import { loadServerConfig, type ServerConfig } from "../../src/server/config.js";
import { startServer, type RunningServer, type StartServerOptions } from "../../src/server/server.js";
import { createLogger } from "../../src/server/logger.js";
import type { BootstrapTenant } from "../../src/server/bootstrap.js";
import { resolveSecretsKey } from "../../src/server/secrets-key.js";
import { createSecretBox, type SecretBox } from "../../src/store/secret-box.js";
import { openStore, type Store } from "../../src/store/store.js";

/** PostgreSQL the suite runs against when SWITCHBOARD_TEST_STORE=postgres. */
export const testPostgresUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A server on its own fresh store, with the bootstrap tenant. */
export interface TestServer {
  server: RunningServer;
  tenant: BootstrapTenant;
  httpUrl: string;
  grpcUrl: string;
  dataDir: string;
  databaseUrl?: string;
  admin: Client<typeof AdminService>;
  close(): Promise<void>;
}

/**
 * Creates an empty PostgreSQL database (on `baseUrl`'s server) for one test
 * file or bench, so they can run in parallel; returns its URL and a drop function.
 */
export async function createTestDatabase(baseUrl = testPostgresUrl): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `sb_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * The secret box of stores a test opens itself: one random key per test
 * process, so a store reopened (or opened as a second replica) in the same
 * process opens what the first sealed.
 */
export const testSecrets: SecretBox = createSecretBox(randomBytes(32));

/** The box `switchboard serve` without SECRETS_KEY seals with on this store: `DATA_DIR/secrets-key` when embedded, none on PostgreSQL. */
export function serverSecrets(dataDir: string, databaseUrl?: string): SecretBox {
  return createSecretBox(resolveSecretsKey(undefined, { dataDir, embedded: !databaseUrl }));
}

/** A store opened straight from a test, without a server around it. */
export interface TestStore {
  store: Store;
  /** The fresh PostgreSQL database on the postgres project, to open a second store (another replica) on; absent on PGlite. */
  databaseUrl?: string;
  /** Closes the store and drops its database. */
  close(): Promise<void>;
}

/** Opens the store under test: a fresh PostgreSQL database on the postgres project, in-memory PGlite otherwise. */
export async function openTestStore(): Promise<TestStore> {
  const database = process.env.SWITCHBOARD_TEST_STORE === "postgres" ? await createTestDatabase() : undefined;
  const store = await openStore({ databaseUrl: database?.url, secrets: testSecrets });
  return {
    store,
    databaseUrl: database?.url,
    async close() {
      await store.close();
      await database?.drop();
    },
  };
}

/**
 * Starts a server on ports chosen by the OS and the store under test, with one
 * speech worker (each one warms up for seconds of CPU) unless `env` asks for more,
 * sealing secrets with a key of its own on PostgreSQL unless `env` or `overrides` say otherwise.
 */
export async function startTestServer(
  env: Record<string, string> = {},
  overrides: Partial<ServerConfig> = {},
  logStream?: NodeJS.WritableStream,
  serverOptions: StartServerOptions = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-test-"));
  const database = process.env.SWITCHBOARD_TEST_STORE === "postgres" ? await createTestDatabase() : undefined;
  const config = {
    // On PostgreSQL a server without SECRETS_KEY keeps secrets in clear: the suite seals them there too.
    ...loadServerConfig(
      { PORT: "0", GRPC_PORT: "0", DATA_DIR: dataDir, EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", ...(database && { SECRETS_KEY: randomBytes(32).toString("hex") }), ...env },
      { bootstrap: true },
    ),
    databaseUrl: database?.url,
    shutdownGraceMs: 1_000,
    ...overrides,
  };
  const logger = logStream ? createLogger("debug", logStream) : pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const server = await startServer(config, logger, serverOptions);
  if (!server.bootstrap) throw new Error("the test store was not empty");
  const adminTransport = createConnectTransport({
    baseUrl: server.httpUrl,
    httpVersion: "1.1",
    interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${server.adminToken}`), next(req))],
  });
  return {
    server,
    tenant: server.bootstrap,
    httpUrl: server.httpUrl,
    grpcUrl: server.grpcUrl,
    dataDir,
    databaseUrl: database?.url,
    admin: createClient(AdminService, adminTransport),
    async close() {
      await server.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A gRPC (HTTP/2) transport to the server's gRPC listener with a bearer key. */
export function grpcTransportFor(url: string, key?: string) {
  return createGrpcTransport({
    baseUrl: url,
    interceptors: key ? [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))] : [],
  });
}

/** Fetches a JSON route of the bridge. */
export async function getJson(url: string, key?: string): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: response.status, headers: response.headers, body: await response.json() };
}
