import { create, isMessage, type DescMessage, type DescMethod, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { createInProcessCallContext } from "./in-process-call-context.js";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** Options for {@link createInProcessTransport}. */
export interface InProcessTransportOptions {
  /** The same interceptors the listeners run, so every caller meets the same decisions. */
  interceptors: readonly Interceptor[];
  /** Aborts every call's handler context when the server shuts down. */
  shutdownSignal?: AbortSignal;
}

type Implementation = (input: unknown, context: HandlerContext) => unknown;

/**
 * The reason a finished call's context is aborted with: one shared error, as
 * an abort without a reason builds a DOMException (and its stack) per call.
 */
const callFinished = new ConnectError("the call has finished", Code.Canceled);

/**
 * Records the implementations a routes function registers, instead of
 * wrapping them in wire-protocol handlers.
 */
function recordImplementations(routes: (router: ConnectRouter) => void): Map<DescMethod, Implementation> {
  const implementations = new Map<DescMethod, Implementation>();
  const recorder = {
    handlers: [],
    service(service: DescService, implementation: Record<string, Implementation | undefined>) {
      for (const method of service.methods) {
        const fn = implementation[method.localName];
        if (fn) implementations.set(method, fn.bind(implementation));
      }
      return recorder;
    },
    rpc(method: DescMethod, implementation: Implementation) {
      implementations.set(method, implementation);
      return recorder;
    },
  };
  routes(recorder as unknown as ConnectRouter);
  return implementations;
}

function asMessage<T extends DescMessage>(schema: T, value: MessageInitShape<T> | MessageShape<T>): MessageShape<T> {
  return isMessage(value, schema) ? value : create(schema, value as MessageInitShape<T>);
}

/**
 * A Connect transport that calls the core's service implementations in this
 * process, running the server's interceptors, without the wire protocol:
 * messages are handed over by reference instead of being serialized, framed
 * and parsed again (which cost the bridge about 1 ms of CPU per call and most
 * of its per-chunk cost with `createRouterTransport`). Callers still hold an
 * ordinary Connect client, so the bridge knows nothing of the core's insides.
 * Unary and server-streaming methods only: the bridge uses nothing else.
 * As with every Connect transport, a caller that stops reading a stream
 * early must abort the call's signal: Connect's client hides `return()`.
 */
export function createInProcessTransport(routes: (router: ConnectRouter) => void, options: InProcessTransportOptions): Transport {
  const implementations = recordImplementations(routes);
  // The first interceptor is the outermost, as in Connect's own chain.
  const intercept = <T>(next: T): T => options.interceptors.reduceRight((inner, interceptor) => interceptor(inner as never) as T, next);

  const contextFor = (method: DescMethod, signal: AbortSignal | undefined, timeoutMs: number | undefined, header: HeadersInit | undefined, values?: ContextValues) =>
    createInProcessCallContext({ method, requestSignal: signal, shutdownSignal: options.shutdownSignal, timeoutMs, requestHeader: header, contextValues: values });

  // What a server-side interceptor sees of a call. Built whole, not spread:
  // the signal stays a getter, so a call nobody watches never builds one.
  const requestOf = <Method extends DescMethod, M>(method: Method, context: HandlerContext, stream: boolean, message: M) => ({
    stream,
    method,
    message,
    service: method.parent,
    requestMethod: "POST",
    url: context.url,
    get signal() {
      return context.signal;
    },
    header: context.requestHeader,
    contextValues: context.values,
  });

  // A response, whose headers and trailers are made only when read.
  const responseOf = <Method extends DescMethod, M>(method: Method, context: HandlerContext, stream: boolean, message: M) => ({
    stream,
    method,
    message,
    service: method.parent,
    get header() {
      return context.responseHeader;
    },
    get trailer() {
      return context.responseTrailer;
    },
  });

  const implementationOf = (method: DescMethod): Implementation => {
    const implementation = implementations.get(method);
    if (!implementation) throw new ConnectError(`${method.parent.typeName}/${method.name} is not implemented`, Code.Unimplemented);
    return implementation;
  };

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethod & { methodKind: "unary"; input: I; output: O },
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const context = contextFor(method, signal, timeoutMs, header, contextValues);
      try {
        const implementation = implementationOf(method);
        const call = intercept(async (request: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> => {
          const output = (await implementation(request.message, context)) as MessageInitShape<O>;
          return responseOf(method, context, false, asMessage(method.output, output)) as UnaryResponse<I, O>;
        });
        return await call(requestOf(method, context, false, asMessage(method.input, input)) as UnaryRequest<I, O>);
      } catch (error) {
        throw ConnectError.from(error);
      } finally {
        context.abort(callFinished);
      }
    },

    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethod & { methodKind: "server_streaming" | "client_streaming" | "bidi_streaming"; input: I; output: O },
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      if (method.methodKind !== "server_streaming") throw new ConnectError("only server streaming is served in process", Code.Unimplemented);
      const context = contextFor(method, signal, timeoutMs, header, contextValues);
      try {
        const implementation = implementationOf(method);
        const call = intercept(async (request: StreamRequest<I, O>): Promise<StreamResponse<I, O>> => {
          let single: MessageShape<I> | undefined;
          for await (const message of request.message) single = message;
          if (single === undefined) throw new ConnectError("a server-streaming call needs one request message", Code.InvalidArgument);
          const outputs = implementation(single, context) as AsyncIterable<MessageInitShape<O>>;
          async function* messages(): AsyncGenerator<MessageShape<O>> {
            try {
              for await (const output of outputs) yield asMessage(method.output, output);
            } catch (error) {
              throw ConnectError.from(error);
            } finally {
              context.abort(callFinished);
            }
          }
          return responseOf(method, context, true, messages()) as StreamResponse<I, O>;
        });
        async function* requests(): AsyncGenerator<MessageShape<I>> {
          for await (const message of input) yield asMessage(method.input, message);
        }
        return await call(requestOf(method, context, true, requests()) as StreamRequest<I, O>);
      } catch (error) {
        context.abort(callFinished);
        throw ConnectError.from(error);
      }
    },
  } as Transport;
}
