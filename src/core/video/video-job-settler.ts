import type { JobQueue } from "../../store/job-queue.js";
import { createOrganizations } from "../../store/organizations.js";
import { createWebhookSettings } from "../../store/webhook-settings.js";
import type { Store } from "../../store/store.js";
import { createVideoJobs, type VideoJobOutcome, type VideoJobSummary } from "../../store/video-jobs.js";
import { videoQueues, type VideoWebhookMessage } from "./video-queues.js";

/** Ends video jobs; shared by the worker (outcomes of runs) and the sweeper (expiry of jobs nobody runs). */
export interface VideoJobSettler {
  /**
   * Moves a job to its terminal status, once, in one transaction with its
   * consequences: the reserved credits go back unless it completed, and its
   * webhook is queued when the job or its organization names a callback URL.
   * `leaseToken` is the running worker's; without it, only a job nobody
   * holds is settled. Undefined when the job was not this call's to end.
   */
  finish(jobId: string, leaseToken: string | undefined, outcome: VideoJobOutcome): Promise<VideoJobSummary | undefined>;
}

/** Creates the settler over the store and the queue. */
export function createVideoJobSettler(options: {
  store: Pick<Store, "db" | "secrets">;
  queue: Pick<JobQueue, "send" | "notify">;
  /** Told of every job this settler ended (metrics). */
  onFinished?: (job: VideoJobSummary) => void;
}): VideoJobSettler {
  const { store, queue } = options;
  return {
    async finish(jobId, leaseToken, outcome) {
      const finished = await store.db.transaction(async (tx) => {
        const job = await createVideoJobs(tx).finish(jobId, leaseToken, outcome);
        if (!job) return undefined;
        if (job.status !== "completed" && job.costUsd > 0) await createOrganizations(tx).refund(job.orgId, job.costUsd);
        const url = job.callbackUrl ?? (await createWebhookSettings(tx, store.secrets).get(job.orgId)).callbackUrl;
        if (url) await queue.send(videoQueues.webhook, { jobId, url } satisfies VideoWebhookMessage, tx);
        return job;
      });
      if (finished) {
        queue.notify(videoQueues.webhook);
        options.onFinished?.(finished);
      }
      return finished;
    },
  };
}
