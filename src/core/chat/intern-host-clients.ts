import { createSecureContext } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodServerStreaming, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { InternHostService } from "../../gen/switchboard/host/v1/host_pb.js";

/** What a host call carries besides its request. */
export interface HostCallOptions {
  /** Ends the call (the host cancels a run whose reader leaves while it streams). */
  signal: AbortSignal;
  /** The host token and the trace context, sent as gRPC metadata. */
  headers: Record<string, string>;
}

/** A server-streaming host method, called with its request message. */
type HostStream<I extends DescMessage, O extends DescMessage> = (request: MessageInitShape<I>, options: HostCallOptions) => AsyncIterable<MessageShape<O>>;

/** The stream function of a generated server-streaming method. */
type HostStreamOf<Method> = Method extends DescMethodServerStreaming<infer I, infer O> ? HostStream<I, O> : never;

/** The host methods a turn uses, on one intern host. */
export interface InternHostClient {
  startRun: HostStreamOf<typeof InternHostService.method.startRun>;
  answerInteraction: HostStreamOf<typeof InternHostService.method.answerInteraction>;
}

/** A host client and the channel under it. */
type HostChannel = InternHostClient & { close(): void };

/** The gRPC channel options of every host connection. */
const channelOptions: grpc.ChannelOptions = {
  // Pings while calls are open: a long silent stream (a run thinking for
  // minutes) is not cut by a middlebox, and a host that vanished is noticed.
  "grpc.keepalive_time_ms": 15_000,
  "grpc.keepalive_timeout_ms": 15_000,
  "grpc.client_idle_timeout_ms": 5 * 60_000,
  // A restarted host is dialled again within a second (0.6 s measured after
  // 10 s down, against 1.8 s with grpc-js's defaults, whose backoff grows to
  // two minutes over a long outage, each turn refused meanwhile).
  "grpc.initial_reconnect_backoff_ms": 250,
  "grpc.max_reconnect_backoff_ms": 1_000,
  // The host relays agent messages of up to 32 MiB whole.
  "grpc.max_receive_message_length": 64 * 1024 * 1024,
};

/**
 * The caller-facing form of a failed call: grpc-js's status, message and
 * `grpc-status-details-bin` (the host's ErrorDetail) read as a ConnectError,
 * so host errors are translated the same whichever client read them.
 */
function connectErrorOf(error: unknown): ConnectError {
  const status = error as Partial<grpc.ServiceError>;
  if (typeof status.code !== "number" || !status.metadata) return ConnectError.from(error);
  const trailer = new Headers({ "grpc-status": String(status.code), "grpc-message": encodeURIComponent(status.details ?? "") });
  const [details] = status.metadata.get("grpc-status-details-bin");
  if (Buffer.isBuffer(details)) trailer.set("grpc-status-details-bin", details.toString("base64"));
  // Connect's own reading of a gRPC status trailer, as its gRPC transport
  // does (a protocol helper for transports; connect is pinned at 2.1.2).
  // gRPC status numbers are Connect's codes.
  return findTrailerError(trailer) ?? new ConnectError(status.details ?? "", status.code as number as Code, undefined, undefined, error);
}

/** Reads a grpc-js stream as an async iterable whose failures are ConnectErrors. */
async function* messagesOf<T>(call: grpc.ClientReadableStream<T>): AsyncGenerator<T> {
  try {
    for await (const message of call) yield message as T;
  } catch (error) {
    throw connectErrorOf(error);
  }
}

function hostStream<I extends DescMessage, O extends DescMessage>(client: grpc.Client, pathPrefix: string, method: DescMethodServerStreaming<I, O>): HostStream<I, O> {
  const path = `${pathPrefix}/${method.parent.typeName}/${method.name}`;
  const serialize = (message: MessageShape<I>) => Buffer.from(toBinary(method.input, message));
  const deserialize = (bytes: Buffer) => fromBinary(method.output, bytes);
  return (request, { signal, headers }) => {
    const metadata = new grpc.Metadata();
    for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
    const call = client.makeServerStreamRequest(path, serialize, deserialize, create(method.input, request), metadata);
    if (signal.aborted) call.cancel();
    else signal.addEventListener("abort", () => call.cancel(), { once: true });
    return messagesOf(call);
  };
}

function connect(endpoint: string): HostChannel {
  const url = new URL(endpoint);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  // Node's own trust store, NODE_EXTRA_CA_CERTS included: grpc-js's
  // createSsl() without roots did not trust a CA added that way (1.14.7).
  const credentials = url.protocol === "https:" ? grpc.credentials.createFromSecureContext(createSecureContext()) : grpc.credentials.createInsecure();
  const client = new grpc.Client(`${url.hostname}:${port}`, credentials, channelOptions);
  // An endpoint may sit under a path, as a Connect base URL may.
  const pathPrefix = url.pathname.replace(/\/+$/, "");
  return {
    startRun: hostStream(client, pathPrefix, InternHostService.method.startRun),
    answerInteraction: hostStream(client, pathPrefix, InternHostService.method.answerInteraction),
    close: () => client.close(),
  };
}

/**
 * gRPC clients to intern hosts, one channel per endpoint, so HTTP/2
 * connections are reused across turns. grpc-js rather than connect-node on
 * this hop: it is the hop every chunk of every turn crosses, and grpc-js
 * reads a message with about a third less CPU (~95 against ~145 µs of the
 * reader's CPU per paced message, 2026-11-26) and holds an open stream in
 * about a third less heap (bench `capacity`). The host token is sent on each
 * call, never cached inside a channel that might outlive a token change.
 */
export function createInternHostClients() {
  const clients = new Map<string, HostChannel>();
  return {
    get(endpoint: string): InternHostClient {
      let client = clients.get(endpoint);
      if (!client) {
        client = connect(endpoint);
        clients.set(endpoint, client);
      }
      return client;
    },
    /** Closes every channel: no new call leaves on them. */
    close() {
      for (const client of clients.values()) client.close();
      clients.clear();
    },
  };
}

/** The intern host client pool. */
export type InternHostClients = ReturnType<typeof createInternHostClients>;
