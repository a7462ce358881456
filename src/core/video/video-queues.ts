import type { JobQueue } from "../../store/job-queue.js";

/** The two queues of video generation: runs, and the webhooks of finished jobs. */
export const videoQueues = { run: "video-jobs", webhook: "video-webhooks" } as const;

/** What a run job carries: the job to run (everything else is in video_jobs). */
export interface VideoRunMessage {
  jobId: string;
}

/** What a webhook job carries: the job, and the destination chosen when it finished. */
export interface VideoWebhookMessage {
  jobId: string;
  url: string;
}

/**
 * Creates (or updates) both queues. A run handed back at shutdown or
 * orphaned by a crash is found through its lease in video_jobs, not through
 * pg-boss's expiry, so that expiry only has to outlast the job's time to
 * live. A delivery retries inside the webhook sender for seconds; the queue
 * retries one cut short by a shutdown or a crash, or whose receiver stayed
 * down, for about 6 hours (15 s doubling, with jitter, 10 times). Its expiry
 * outlasts one delivery (5 attempts of at most 10 s, 15 s of backoff), so a
 * delivery orphaned by a crash is retried within minutes.
 */
export async function defineVideoQueues(queue: Pick<JobQueue, "define">, ttlSeconds: number): Promise<void> {
  await queue.define(videoQueues.run, { retryLimit: 10, retryDelaySeconds: 2, retryBackoff: true, expireInSeconds: ttlSeconds + 60 });
  await queue.define(videoQueues.webhook, { retryLimit: 10, retryDelaySeconds: 15, retryBackoff: true, expireInSeconds: 120 });
}
