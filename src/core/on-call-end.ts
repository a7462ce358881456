import type { Interceptor } from "@connectrpc/connect";

type Next = Parameters<Interceptor>[0];
type CallRequest = Parameters<Next>[0];

/** What {@link onCallEnd} reports when a stream's reader stopped before its last message. */
export const readerLeft: unique symbol = Symbol("the reader left before the stream ended");

/**
 * Runs a call and reports once when it is over: a unary response, or a
 * stream's last message (`undefined`), its failure (the error), or a reader
 * that stopped early ({@link readerLeft}). Interceptors that time or trace
 * calls share it, so streams are ended the same way everywhere.
 * `mapError` replaces what the caller is thrown; `ended` still hears the original.
 */
export async function onCallEnd(
  next: Next,
  req: CallRequest,
  ended: (outcome: unknown) => void,
  mapError: (error: unknown) => unknown = (error) => error,
): Promise<Awaited<ReturnType<Next>>> {
  let response;
  try {
    response = await next(req);
  } catch (error) {
    ended(error);
    throw mapError(error);
  }
  if (!response.stream) {
    ended(undefined);
    return response;
  }
  const messages = response.message;
  return {
    ...response,
    message: (async function* () {
      let outcome: unknown = readerLeft;
      try {
        yield* messages;
        outcome = undefined;
      } catch (error) {
        outcome = error;
        throw mapError(error);
      } finally {
        ended(outcome);
      }
    })(),
  };
}
