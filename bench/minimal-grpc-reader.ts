import http2 from "node:http2";
import { create, fromBinary, toBinary, type DescMessage, type DescMethod, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";

/** A server-streaming method, as generated code describes it. */
type ServerStreamingMethod<I extends DescMessage, O extends DescMessage> = DescMethod & { methodKind: "server_streaming"; input: I; output: O };

/**
 * The least a gRPC reader can do, for benchmarks that time what a server
 * adds per message: one HTTP/2 request, the 5-byte length prefix, protobuf
 * decoding, and the `grpc-status` trailer, with no interceptor chain or
 * async-iterable pipeline in between. It plays the part of `readline` on the
 * baseline path, so the reader's own cost is not counted as the server's.
 */
export class MinimalGrpcReader {
  readonly #session: http2.ClientHttp2Session;

  constructor(baseUrl: string) {
    this.#session = http2.connect(baseUrl);
    this.#session.on("error", () => undefined);
  }

  /** Calls `method` and hands each response message to `onMessage` as it is decoded; resolves when the call ends with status 0. `signal` cancels the call. */
  serverStream<I extends DescMessage, O extends DescMessage>(
    method: ServerStreamingMethod<I, O>,
    request: MessageInitShape<I>,
    headers: Record<string, string>,
    onMessage: (message: MessageShape<O>) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const body = toBinary(method.input, create(method.input, request));
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    const stream = this.#session.request({
      ":method": "POST",
      ":path": `/${method.parent.typeName}/${method.name}`,
      "content-type": "application/grpc+proto",
      te: "trailers",
      ...headers,
    });
    return new Promise((resolve, reject) => {
      let pending: Buffer = Buffer.alloc(0);
      let status: string | undefined;
      let statusMessage: string | undefined;
      stream.on("data", (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        while (pending.length >= 5) {
          const length = pending.readUInt32BE(1);
          if (pending.length < 5 + length) break;
          onMessage(fromBinary(method.output, pending.subarray(5, 5 + length)));
          pending = pending.subarray(5 + length);
        }
      });
      // A trailers-only response carries the status in its headers.
      const readStatus = (fields: http2.IncomingHttpHeaders) => {
        if (fields["grpc-status"] !== undefined) [status, statusMessage] = [String(fields["grpc-status"]), fields["grpc-message"] as string | undefined];
      };
      stream.on("response", readStatus);
      stream.on("trailers", readStatus);
      stream.on("error", reject);
      stream.on("close", () => {
        if (status === "0") resolve();
        else reject(new Error(`${method.name} ended with grpc-status ${status ?? "(none)"}${statusMessage ? `: ${decodeURIComponent(statusMessage)}` : ""}`));
      });
      signal?.addEventListener("abort", () => stream.close(http2.constants.NGHTTP2_CANCEL), { once: true });
      stream.end(frame);
    });
  }

  close(): void {
    this.#session.close();
  }
}
