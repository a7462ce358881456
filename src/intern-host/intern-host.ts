import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { InternHostRoutesOptions } from "./host-options.js";
import { createInternHostRoutes } from "./intern-host-routes.js";
import { startMetricsListener, type MetricsListener } from "./metrics-listener.js";

/** Options of `switchboard intern-host`: the host's own options plus where to listen. */
export interface InternHostOptions extends InternHostRoutesOptions {
  /** Interface to bind (`--listen HOST:PORT`); default 127.0.0.1. */
  host?: string;
  /** Port to bind; 0 picks a free one (see `RunningInternHost.port`). */
  port: number;
  /** Serves the host's metrics (its own registry) on `GET /metrics` at this address, over HTTP/1.1 (`--metrics-listen`). */
  metricsListen?: { host: string; port: number };
}

/** A listening intern host. */
export interface RunningInternHost {
  /** `http://host:port`, for gRPC, Connect and gRPC-Web clients over HTTP/2 cleartext. */
  readonly url: string;
  readonly port: number;
  /** `http://host:port/metrics` when `metricsListen` was given. */
  readonly metricsUrl?: string;
  /** Ends every run, terminates the agent and closes the listener and its connections. */
  close(): Promise<void>;
}

/**
 * The largest request a gateway sends: an answer within the chat route's
 * 1 MiB body, or a prompt of 32,000 characters, with room for framing.
 */
const hostReadMaxBytes = 1024 * 1024 + 64 * 1024;

/**
 * Streams one HTTP/2 connection may hold open on the host. A gateway carries
 * every run it relays to this host over one connection, so this is also the
 * most runs one gateway can hold open here at once (a run beyond it waits
 * for a slot, then fails `timeout`); a bound still, so one client cannot
 * make the host hold streams without end.
 */
export const hostMaxConcurrentStreams = 10_000;

/**
 * Starts `switchboard intern-host`: InternHostService over cleartext HTTP/2
 * (gRPC, Connect and gRPC-Web), in front of one ACP agent. The agent is
 * started right away but not awaited: the host comes up even while its agent
 * cannot, reports it in GetHostStatus, and keeps retrying with backoff.
 */
export async function startInternHost(options: InternHostOptions): Promise<RunningInternHost> {
  const registry = options.metricsListen && new Registry();
  if (registry) collectDefaultMetrics({ register: registry });
  const host = createInternHostRoutes(registry ? { ...options, metricsRegistry: registry } : options);
  // Connect reads a request before the token check runs, and its default
  // limit is 4 GiB: a stranger's 400 MiB CancelRun took the host to 2 GB.
  const server = http2.createServer({ settings: { maxConcurrentStreams: hostMaxConcurrentStreams } }, connectNodeAdapter({ routes: host.routes, readMaxBytes: hostReadMaxBytes }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const hostname = options.host ?? "127.0.0.1";
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    await host.close();
    throw error;
  }
  let metrics: MetricsListener | undefined;
  try {
    if (registry && options.metricsListen) metrics = await startMetricsListener(registry, options.metricsListen.host, options.metricsListen.port);
  } catch (error) {
    await host.close();
    server.close();
    throw error;
  }
  host.startAgent().catch((error: unknown) => options.logger?.error({ err: String(error) }, "agent did not start; retrying with backoff"));
  const { port } = server.address() as AddressInfo;
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    metricsUrl: metrics?.url,
    async close() {
      await metrics?.close();
      await host.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Let streams flush their terminal events, then drop connections that idle on.
      for (const session of sessions) session.close();
      const force = setTimeout(() => {
        for (const session of sessions) session.destroy();
      }, 1_000);
      await closed.finally(() => clearTimeout(force));
    },
  };
}
