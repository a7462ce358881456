import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import type { VideoModelRegistry } from "../../providers/video/index.js";
import type { WebhookSender } from "../../providers/webhook/index.js";
import type { JobQueue } from "../../store/job-queue.js";
import type { Store } from "../../store/store.js";
import { createVideoJobRunner } from "./video-job-runner.js";
import { createVideoJobSettler } from "./video-job-settler.js";
import { startVideoJobSweeper } from "./video-job-sweeper.js";
import { videoQueues, type VideoRunMessage, type VideoWebhookMessage } from "./video-queues.js";
import { createVideoWebhookDelivery } from "./video-webhook-delivery.js";

/** Options for {@link startVideoWorkers}. */
export interface VideoWorkersOptions {
  store: Pick<Store, "db" | "videoJobs" | "webhookSettings" | "webhookDeliveries" | "secrets">;
  queue: Pick<JobQueue, "send" | "notify" | "work" | "activeLongerThan" | "retry">;
  models: Pick<VideoModelRegistry, "get">;
  sender: WebhookSender;
  dataDir: string;
  /** Jobs run at once on this replica; 0 makes it an API-only replica (it still sweeps and delivers webhooks). */
  workers: number;
  leaseSeconds: number;
  /** This replica, recorded on the jobs it runs. */
  owner: string;
  /** True on the embedded store: see {@link startVideoJobSweeper}. */
  recoverAllAtStart: boolean;
  logger: Logger;
  /** Told of every job this replica ended, with its time from submission (metrics). */
  onJobFinished?: (status: string, seconds: number) => void;
  /** Told the outcome of every webhook delivery (metrics). */
  onWebhookOutcome?: (outcome: string) => void;
  /** Job runs and webhook deliveries are spans under their submissions'. */
  tracer: Tracer;
}

/** How often idle workers look for jobs sent by other replicas; a send on this replica wakes them at once. */
const pollIntervalSeconds = 1;

/** Webhooks delivered at once per replica; a delivery mostly waits on the network or a backoff. */
const webhookWorkers = 2;

/**
 * Starts this replica's share of the video pipeline: the sweeper (recovery
 * and expiry, on every replica so a lone survivor still recovers), the
 * webhook workers, then the run workers. `stop()` hands running jobs back to
 * the queue and cuts deliveries short; the next worker picks both up again.
 */
export async function startVideoWorkers(options: VideoWorkersOptions): Promise<{ stop(): Promise<void> }> {
  const { store, queue, logger } = options;
  const shutdown = new AbortController();
  const settler = createVideoJobSettler({
    store,
    queue,
    onFinished: (job) => options.onJobFinished?.(job.status, ((job.finishedAt ?? new Date()).getTime() - job.createdAt.getTime()) / 1000),
  });
  const sweeper = await startVideoJobSweeper({
    store,
    queue,
    settler,
    intervalMs: Math.min(5_000, (options.leaseSeconds * 1000) / 2),
    stalledAfterSeconds: options.leaseSeconds,
    recoverAllAtStart: options.recoverAllAtStart,
    logger,
  });
  const stop = async () => {
    shutdown.abort();
    options.sender.close();
    await sweeper.stop();
  };
  try {
    // Deliveries are light and every replica sweeps, so every replica delivers too, API-only ones included.
    const deliver = createVideoWebhookDelivery({ store, sender: options.sender, logger, onOutcome: options.onWebhookOutcome, tracer: options.tracer });
    await queue.work<VideoWebhookMessage>(videoQueues.webhook, { workers: webhookWorkers, pollIntervalSeconds }, deliver);
    if (options.workers > 0) {
      const runJob = createVideoJobRunner({
        store,
        models: options.models,
        settler,
        dataDir: options.dataDir,
        leaseSeconds: options.leaseSeconds,
        owner: options.owner,
        logger,
        shutdown: shutdown.signal,
        tracer: options.tracer,
      });
      await queue.work<VideoRunMessage>(videoQueues.run, { workers: options.workers, pollIntervalSeconds }, ({ jobId }) => runJob(jobId));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop };
}
