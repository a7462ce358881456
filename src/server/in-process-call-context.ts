import { Code, ConnectError, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { DescMethod } from "@bufbuild/protobuf";

/** What {@link createInProcessCallContext} needs to know of a call. */
export interface InProcessCallInit {
  method: DescMethod;
  /** The caller's signal: aborting it aborts the call. */
  requestSignal?: AbortSignal;
  /** The server's: aborts every call when it shuts down. */
  shutdownSignal?: AbortSignal;
  timeoutMs?: number;
  requestHeader?: HeadersInit;
  contextValues?: ContextValues;
}

/** A call's context, and the way to end it. */
export interface InProcessCallContext extends HandlerContext {
  /** Ends the call: its signal (if anyone asked for it) aborts with `reason`, and it lets go of the caller's and the server's signals. */
  abort(reason: unknown): void;
}

const deadlineExceeded = () => new ConnectError("the operation timed out", Code.DeadlineExceeded);

/**
 * The handler context of a call made through the in-process transport. It
 * does what Connect's `createHandlerContext` does, but builds the call's
 * signal and response headers only when something reads them, and takes a
 * caller's request `Headers` as they are instead of copying them (the bridge
 * builds them afresh for each call): a unary call whose handler never watches
 * its signal (member listing, a video poll) then costs no AbortController, no
 * listener on the server's long-lived shutdown signal and no `Headers` copies.
 * Measured on member listing, those were about a tenth of the bridge's CPU
 * per request.
 */
export function createInProcessCallContext(init: InProcessCallInit): InProcessCallContext {
  const deadline = init.timeoutMs === undefined ? undefined : Date.now() + init.timeoutMs;
  const requestHeader = init.requestHeader instanceof Headers ? init.requestHeader : new Headers(init.requestHeader);
  let controller: AbortController | undefined;
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  let ended: { reason: unknown } | undefined;
  let release = () => {};

  const linkSignal = (): AbortController => {
    const linked = new AbortController();
    if (ended) {
      linked.abort(ended.reason);
      return linked;
    }
    const sources = [init.requestSignal, init.shutdownSignal].filter((signal) => signal !== undefined);
    const follow = (source: AbortSignal) => () => end(source.reason);
    const listeners = sources.map((source) => [source, follow(source)] as const);
    let timer: NodeJS.Timeout | undefined;
    release = () => {
      clearTimeout(timer);
      for (const [source, listener] of listeners) source.removeEventListener("abort", listener);
    };
    for (const [source, listener] of listeners) {
      if (source.aborted) {
        linked.abort(source.reason);
        release();
        return linked;
      }
      source.addEventListener("abort", listener, { once: true });
    }
    if (deadline !== undefined) timer = setTimeout(() => end(deadlineExceeded()), Math.max(0, deadline - Date.now()));
    return linked;
  };

  const end = (reason: unknown) => {
    if (ended) return;
    ended = { reason };
    release();
    controller?.abort(reason);
  };

  return {
    method: init.method,
    service: init.method.parent,
    requestMethod: "POST",
    protocolName: "in-process",
    url: `/${init.method.parent.typeName}/${init.method.name}`,
    requestHeader,
    values: init.contextValues ?? createContextValues(),
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    get signal() {
      return (controller ??= linkSignal()).signal;
    },
    get responseHeader() {
      return (responseHeader ??= new Headers());
    },
    get responseTrailer() {
      return (responseTrailer ??= new Headers());
    },
    abort: end,
  };
}
