import type { Queryable } from "./database.js";

/** One attempt to deliver a webhook, as recorded. */
export interface WebhookDeliveryRecord {
  jobId: string;
  url: string;
  idempotencyKey: string;
  /** 1-based; 0 when the destination was refused before anything was sent. */
  attempt: number;
  statusCode?: number;
  error?: string;
  durationMs?: number;
  /** How the delivery ended, on the attempt that ended it (`delivered`, `rejected`, `refused`, `exhausted`, `aborted`). */
  outcome?: string;
}

/**
 * The webhook_deliveries table: every attempt of every webhook, so an
 * operator can answer "did the customer's endpoint get it, and what did it
 * say" without logs.
 */
export function createWebhookDeliveries(db: Queryable) {
  return {
    async record(delivery: WebhookDeliveryRecord): Promise<void> {
      await db.query(
        `INSERT INTO webhook_deliveries (job_id, url, idempotency_key, attempt, status_code, error, duration_ms, outcome)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          delivery.jobId,
          delivery.url,
          delivery.idempotencyKey,
          delivery.attempt,
          delivery.statusCode ?? null,
          delivery.error ?? null,
          delivery.durationMs ?? null,
          delivery.outcome ?? null,
        ],
      );
    },
    /** Marks how a delivery ended, on its latest attempt. */
    async setOutcome(jobId: string, idempotencyKey: string, outcome: string): Promise<void> {
      await db.query(
        `UPDATE webhook_deliveries SET outcome = $3
          WHERE id = (SELECT max(id) FROM webhook_deliveries WHERE job_id = $1 AND idempotency_key = $2)`,
        [jobId, idempotencyKey, outcome],
      );
    },
    /** A job's attempts, oldest first. */
    async forJob(jobId: string): Promise<WebhookDeliveryRecord[]> {
      const rows = await db.query<{
        job_id: string;
        url: string;
        idempotency_key: string;
        attempt: number;
        status_code: number | null;
        error: string | null;
        duration_ms: number | null;
        outcome: string | null;
      }>("SELECT job_id, url, idempotency_key, attempt, status_code, error, duration_ms, outcome FROM webhook_deliveries WHERE job_id = $1 ORDER BY id", [jobId]);
      return rows.map((row) => ({
        jobId: row.job_id,
        url: row.url,
        idempotencyKey: row.idempotency_key,
        attempt: row.attempt,
        ...(row.status_code !== null && { statusCode: row.status_code }),
        ...(row.error !== null && { error: row.error }),
        ...(row.duration_ms !== null && { durationMs: row.duration_ms }),
        ...(row.outcome !== null && { outcome: row.outcome }),
      }));
    },
  };
}

/** The webhook_deliveries table. */
export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
