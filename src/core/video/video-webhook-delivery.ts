import { SpanKind, type Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import { createVideoWebhookEvent, videoWebhookIdempotencyKey, type WebhookSender } from "../../providers/webhook/index.js";
import type { Store } from "../../store/store.js";
import { contextOfTraceparent, startChildSpan } from "../call-tracing.js";
import { videoWebhookJob } from "./video-job-message.js";
import type { VideoWebhookMessage } from "./video-queues.js";

/** What the webhook handler is built from. */
export interface VideoWebhookDeliveryOptions {
  store: Pick<Store, "videoJobs" | "webhookSettings" | "webhookDeliveries">;
  sender: WebhookSender;
  logger: Pick<Logger, "info" | "warn">;
  /** Told the outcome of every delivery (metrics). */
  onOutcome?: (outcome: string) => void;
  /** Each delivery is a span in its job's trace. */
  tracer: Tracer;
}

/**
 * Creates the handler of the webhook queue: it delivers a finished job's
 * event (DESIGN.md §5) to the URL chosen when the job finished, signed with
 * the organization's secret when it has one, and records every attempt. The
 * event's `created_at` is the job's finishing time, so a delivery retried by
 * the queue sends the same body under the same idempotency key. Throws when
 * a shutdown cut the delivery short or its attempts ran out against a
 * receiver that is down (5xx, 429, network), so the queue tries again later:
 * the sender's own retries span seconds, a receiver's outage may last hours.
 * A receiver that refuses the event (4xx) or a destination not allowed is final.
 */
export function createVideoWebhookDelivery(options: VideoWebhookDeliveryOptions): (message: VideoWebhookMessage) => Promise<void> {
  const { store, sender, logger } = options;
  return async ({ jobId, url }) => {
    const job = await store.videoJobs.get(jobId);
    const webhookJob = job && videoWebhookJob(job);
    if (!job || !webhookJob) return;
    const { signingSecret } = await store.webhookSettings.get(job.orgId);
    const idempotencyKey = videoWebhookIdempotencyKey(webhookJob);
    const span = startChildSpan(options.tracer, contextOfTraceparent(job.traceparent), "video.webhook", SpanKind.PRODUCER, { "switchboard.job_id": jobId });
    try {
      const result = await sender.deliver({
        url,
        body: createVideoWebhookEvent(webhookJob, job.finishedAt),
        idempotencyKey,
        signingSecret,
        onAttempt: (attempt) =>
          store.webhookDeliveries.record({ jobId, url, idempotencyKey, attempt: attempt.attempt, statusCode: attempt.status, error: attempt.error, durationMs: attempt.durationMs }),
      });
      if (result.attempts === 0) {
        await store.webhookDeliveries.record({ jobId, url, idempotencyKey, attempt: 0, error: result.error, outcome: result.outcome });
      } else {
        await store.webhookDeliveries.setOutcome(jobId, idempotencyKey, result.outcome);
      }
      options.onOutcome?.(result.outcome);
      span.setAttributes({ "switchboard.outcome": result.outcome, "switchboard.attempts": result.attempts });
      const log = { job_id: jobId, outcome: result.outcome, attempts: result.attempts, status: result.status };
      if (result.outcome === "delivered") logger.info(log, "video webhook delivered");
      else logger.warn({ ...log, error: result.error }, "video webhook not delivered");
      if (result.outcome === "aborted") throw new Error(`The webhook delivery of ${jobId} was interrupted.`);
      if (result.outcome === "exhausted") throw new Error(`The webhook receiver of ${jobId} is not answering; the delivery is retried later.`);
    } finally {
      span.end();
    }
  };
}
