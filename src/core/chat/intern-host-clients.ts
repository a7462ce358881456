import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InternHostService } from "../../gen/switchboard/host/v1/host_pb.js";

/** A client for one intern host. */
export type InternHostClient = Client<typeof InternHostService>;

/**
 * Connect clients to intern hosts, one per endpoint, so HTTP/2 connections
 * are reused across turns. The host token is sent on each call, never cached
 * inside a transport that might outlive a token change.
 */
export function createInternHostClients() {
  const clients = new Map<string, InternHostClient>();
  return {
    get(endpoint: string): InternHostClient {
      let client = clients.get(endpoint);
      if (!client) {
        client = createClient(InternHostService, createGrpcTransport({ baseUrl: endpoint, pingIntervalMs: 15_000, idleConnectionTimeoutMs: 5 * 60_000 }));
        clients.set(endpoint, client);
      }
      return client;
    },
  };
}

/** The intern host client pool. */
export type InternHostClients = ReturnType<typeof createInternHostClients>;
