/** The statuses a video job ends in; each sends one webhook. */
export type VideoTerminalStatus = "completed" | "failed" | "cancelled" | "expired";

/** Usage and cost of a job, as in the public job object. */
export interface VideoWebhookUsage {
  cost: number;
  is_byok: boolean;
}

/** The job as the webhook reports it. */
export interface VideoWebhookJob {
  id: string;
  status: VideoTerminalStatus;
  generation_id?: string;
  model: string;
  /** Present for `completed`. */
  unsigned_urls?: string[];
  /** Present for `failed`, `cancelled` and `expired`. */
  error?: string;
  usage?: VideoWebhookUsage;
}

/** Body of a video webhook (DESIGN.md §5). */
export interface VideoWebhookEvent {
  type: `video.generation.${VideoTerminalStatus}`;
  /** Unix seconds when the event was created; unchanged across retries. */
  created_at: number;
  data: VideoWebhookJob;
}

/** The `error` sent when the job carries none. */
const defaultErrors: Record<Exclude<VideoTerminalStatus, "completed">, string> = {
  failed: "The video generation failed.",
  cancelled: "The video generation was cancelled.",
  expired: "The video generation expired before it completed.",
};

/**
 * Builds the webhook body for a job that reached a terminal status. Members
 * that do not apply are omitted rather than null: `unsigned_urls` only on
 * completion, `error` only otherwise.
 */
export function createVideoWebhookEvent(job: VideoWebhookJob, createdAt: Date = new Date()): VideoWebhookEvent {
  const data: VideoWebhookJob = {
    id: job.id,
    status: job.status,
    ...(job.generation_id !== undefined && { generation_id: job.generation_id }),
    model: job.model,
    ...(job.status === "completed" ? { unsigned_urls: job.unsigned_urls ?? [] } : { error: job.error ?? defaultErrors[job.status] }),
    ...(job.usage !== undefined && { usage: job.usage }),
  };
  return { type: `video.generation.${job.status}`, created_at: Math.floor(createdAt.getTime() / 1000), data };
}

/** The idempotency key of a job's webhook, `<job_id>-<status>`: one per job and terminal status, stable across retries. */
export function videoWebhookIdempotencyKey(job: Pick<VideoWebhookJob, "id" | "status">): string {
  return `${job.id}-${job.status}`;
}
