import type { Logger } from "pino";
import type { Store } from "../../store/store.js";

/**
 * How old a pending speech charge on PostgreSQL must be before a sweep takes
 * its process for dead and refunds it. A charge lives until first audio
 * (streaming) or completion (unary). Only upstream models are priced (eSpeak
 * is free), and their engine allows `timeout_ms` (at most 600 s in the models
 * file) for the response headers and again for each chunk: first audio comes
 * within 20 minutes or the synthesis fails. A unary synthesis of the longest
 * input (4096 characters, about 20 minutes of audio at speed 0.25) streamed
 * at real time ends well within the hour. A synthesis that did outlive the
 * bound loses nothing twice: the sweep refunds it and its own settle then
 * finds the row gone.
 */
export const speechChargeStaleSeconds = 3600;

/** Between two sweeps on PostgreSQL: a replica that died is refunded within this of the bound. */
const sweepIntervalMs = 60_000;

/** What the sweep works on, and how. */
export interface SpeechChargeSweepOptions {
  store: Pick<Store, "speechCharges">;
  /** A line with the count whenever a sweep refunds something; errors. Never a key or text. */
  logger: Pick<Logger, "info" | "error">;
  /**
   * The embedded store belongs to this one process, which has not served yet:
   * every pending charge is a dead process's, so all are refunded at once and
   * no periodic sweep is needed. On PostgreSQL other replicas may be
   * synthesizing, so only charges older than {@link speechChargeStaleSeconds} go.
   */
  embedded: boolean;
  /** Overrides {@link speechChargeStaleSeconds} on PostgreSQL (tests). */
  staleAfterSeconds?: number;
  /** Overrides the minute between sweeps on PostgreSQL (tests). */
  intervalMs?: number;
}

/** A running sweep. */
export interface SpeechChargeSweep {
  /** Stops the periodic sweep and waits for one in progress, so the store can close after it. */
  stop(): Promise<void>;
}

/**
 * Refunds speech charges whose process died before settling them (kill -9,
 * OOM): once before the server takes traffic, then every minute on
 * PostgreSQL, where a replica may die at any time. Failures are logged and
 * retried by the next sweep or start.
 */
export async function startSpeechChargeSweep(options: SpeechChargeSweepOptions): Promise<SpeechChargeSweep> {
  const bound = options.embedded ? "all" : (options.staleAfterSeconds ?? speechChargeStaleSeconds);
  const sweep = async () => {
    try {
      const refunded = await options.store.speechCharges.refundStale(bound);
      if (refunded.length > 0) options.logger.info({ count: refunded.length, generation_ids: refunded }, "refunded speech charges left by a process that died");
    } catch (error) {
      options.logger.error({ err: error }, "speech charge sweep failed");
    }
  };
  let running: Promise<void> = sweep();
  await running;
  if (options.embedded) return { stop: async () => undefined };

  const timer = setInterval(() => {
    // One sweep at a time: the next waits for the one in progress (sweep() never rejects).
    running = running.then(sweep);
  }, options.intervalMs ?? sweepIntervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
