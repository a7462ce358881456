import type { FastifyReply } from "fastify";

/** A core call's link to the HTTP client that asked for it. */
export interface ClientDisconnect {
  /** Aborts when the client's socket closes before the response finished. */
  readonly signal: AbortSignal;
  /** Aborts the call from the route itself. */
  abort(): void;
  /** Stops watching the socket. */
  release(): void;
}

/**
 * Watches for a client that goes away, so the core stops work nobody will
 * read (a chat run is cancelled, an engine released). The socket closing is
 * the signal, even when no write is pending; it is `reply.raw` that reports
 * it, not `request.raw` (DESIGN §9).
 */
export function watchClientDisconnect(reply: FastifyReply): ClientDisconnect {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.on("close", onClose);
  return { signal: controller.signal, abort: () => controller.abort(), release: () => reply.raw.off("close", onClose) };
}
