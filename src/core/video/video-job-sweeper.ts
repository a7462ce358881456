import type { Logger } from "pino";
import type { JobQueue } from "../../store/job-queue.js";
import type { Store } from "../../store/store.js";
import { createVideoJobs } from "../../store/video-jobs.js";
import { expiredError } from "./video-job-runner.js";
import type { VideoJobSettler } from "./video-job-settler.js";
import { videoQueues, type VideoRunMessage } from "./video-queues.js";

/** Options for {@link startVideoJobSweeper}. */
export interface VideoJobSweeperOptions {
  store: Pick<Store, "db" | "videoJobs">;
  queue: Pick<JobQueue, "send" | "notify" | "activeLongerThan" | "retry">;
  settler: VideoJobSettler;
  intervalMs: number;
  /**
   * A run taken from the queue this long ago whose job nobody holds lost its
   * worker before the claim: the lease period. Such runs are looked for at
   * most once per this period, as the look reads the queue's table.
   */
  stalledAfterSeconds: number;
  /**
   * Requeue every unfinished job on the first sweep, whoever held it: true on
   * the embedded store, whose single process is the only worker there ever
   * was, so a job held by the previous run need not wait for its lease to lapse.
   */
  recoverAllAtStart: boolean;
  logger: Pick<Logger, "info" | "error">;
}

/** Overdue jobs settled per sweep, so one sweep stays short. */
const expiriesPerSweep = 100;

/**
 * Starts the periodic sweep that keeps jobs moving when their worker is
 * gone: a job whose lease lapsed (its replica crashed or was killed) is
 * queued again, in the same transaction that frees it, so two replicas
 * sweeping at once never both requeue it; a run whose worker died before
 * claiming its job is handed back to the queue; and a job past its time to live
 * that nobody holds is expired (refund and webhook included). Resolves once
 * the first sweep is done, so workers started afterwards find the recovered
 * jobs already queued.
 */
export async function startVideoJobSweeper(options: VideoJobSweeperOptions): Promise<{ stop(): Promise<void> }> {
  const { store, queue, settler, logger } = options;

  async function sweep(all: boolean): Promise<void> {
    const requeued = await store.db.transaction(async (tx) => {
      const ids = await createVideoJobs(tx).releaseOrphans(all);
      for (const jobId of ids) await queue.send(videoQueues.run, { jobId } satisfies VideoRunMessage, tx);
      return ids;
    });
    if (requeued.length > 0) {
      logger.info({ job_ids: requeued }, "video jobs requeued after their worker went away");
      queue.notify(videoQueues.run);
    }
    if (performance.now() >= nextStalledCheck) {
      nextStalledCheck = performance.now() + options.stalledAfterSeconds * 1000;
      await retryStalledRuns();
    }
    for (const jobId of await store.videoJobs.overdue(expiriesPerSweep)) {
      if (await settler.finish(jobId, undefined, { status: "expired", error: expiredError })) logger.info({ job_id: jobId }, "video job expired");
    }
  }

  // A worker that died between taking a run from the queue and claiming its job left no lease to lapse;
  // the queue would hold the run as active until its expiry, past the job's time to live. The look scans the
  // queue's partition of pg-boss's job table (no index serves it), so it runs once per lease period, not per
  // sweep: a lost run is retried within two lease periods of being taken.
  let nextStalledCheck = 0;
  async function retryStalledRuns(): Promise<void> {
    const stalled = await queue.activeLongerThan(videoQueues.run, options.stalledAfterSeconds);
    if (stalled.length === 0) return;
    const unheld = new Set(await store.videoJobs.unheld(stalled.map((run) => String(run.data.jobId))));
    const lost = stalled.filter((run) => unheld.has(String(run.data.jobId)));
    if (lost.length === 0) return;
    await queue.retry(videoQueues.run, lost.map((run) => run.id));
    logger.info({ job_ids: lost.map((run) => run.data.jobId) }, "video jobs retried after their worker went away before starting them");
  }

  let sweeping: Promise<void> = sweep(options.recoverAllAtStart);
  await sweeping;
  const timer = setInterval(() => {
    // One sweep at a time; a failed sweep is reported and the next one tries again.
    sweeping = sweeping.then(() => sweep(false)).catch((error: unknown) => logger.error({ err: error }, "video job sweep failed"));
  }, options.intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
