import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

/** The cleartext HTTP/2 listener with its open sessions, for shutdown. */
export interface GrpcListener {
  server: Http2Server;
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting; resolves when open calls end or `graceMs` passes. */
  close(graceMs: number): Promise<void>;
}

/** Streams one client connection may hold open at once; Node's default is unbounded. */
export const maxConcurrentStreams = 1_000;

/**
 * gRPC, Connect and gRPC-Web over cleartext HTTP/2 (h2c), which grpc-js and
 * other native gRPC clients need. Node cannot serve HTTP/1.1 and h2c on one
 * plain port, hence a listener of its own.
 */
export function createGrpcListener(routes: (router: ConnectRouter) => void, routerOptions: ConnectRouterOptions): GrpcListener {
  const server = createServer({ settings: { maxConcurrentStreams } }, connectNodeAdapter({ ...routerOptions, routes }));
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const address = server.address();
          resolve(typeof address === "object" && address ? address.port : port);
        });
      }),
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Sessions finish their open streams; new streams are refused.
        for (const session of sessions) session.close();
        setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, graceMs).unref();
      }),
  };
}
