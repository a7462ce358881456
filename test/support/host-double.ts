import { createServer, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import type { ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";

/** A listening {@link startHostDouble}. */
export interface HostDouble {
  /** `http://127.0.0.1:PORT`, the endpoint to register the intern with. */
  url: string;
  /** Cuts the gateway's pooled connections (it keeps them open) and stops listening. */
  close(): void;
}

/** Where {@link startHostDouble} listens. */
export interface HostDoubleOptions {
  /** A loopback port (a host restarting where it was); a free one by default. */
  port?: number;
  /** A path the service sits under, which then ends `url`. */
  requestPathPrefix?: string;
}

/**
 * An intern host double speaking the real protocol: the given InternHostService
 * methods behind Connect's Node adapter on cleartext HTTP/2, on a free
 * loopback port. Methods left out answer `unimplemented`.
 */
export async function startHostDouble(implementation: Partial<ServiceImpl<typeof InternHostService>>, options: HostDoubleOptions = {}): Promise<HostDouble> {
  const { port = 0, requestPathPrefix } = options;
  const server = createServer(connectNodeAdapter({ routes: (router) => router.service(InternHostService, implementation), requestPathPrefix }));
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (session) => sessions.add(session));
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${requestPathPrefix ?? ""}`,
    close() {
      for (const session of sessions) session.destroy();
      server.close();
    },
  };
}
