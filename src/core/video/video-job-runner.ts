import { SpanKind, type Span, type Tracer } from "@opentelemetry/api";
import { randomBytes, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { runVideoJob, VideoProviderError, type VideoGenerationRequest, type VideoModelRegistry, type VideoProvider } from "../../providers/video/index.js";
import type { Store } from "../../store/store.js";
import type { VideoJobLease, VideoJobRecord, VideoJobs } from "../../store/video-jobs.js";
import { contextOfTraceparent, endSpan, startChildSpan } from "../call-tracing.js";
import type { VideoJobSettler } from "./video-job-settler.js";

/** What the runner is built from. */
export interface VideoJobRunnerOptions {
  store: Pick<Store, "videoJobs">;
  models: Pick<VideoModelRegistry, "get">;
  settler: VideoJobSettler;
  /** Outputs go to `dataDir/videos/<jobId>/`. */
  dataDir: string;
  /** How long a worker's hold on a job lasts without renewal; renewed every third of it. */
  leaseSeconds: number;
  /** This replica, recorded on the jobs it runs. */
  owner: string;
  logger: Pick<Logger, "child">;
  /** Aborted at shutdown: running jobs are handed back to the queue, not failed. */
  shutdown: AbortSignal;
  /** Each run is a span under the submission's (its stored traceparent). */
  tracer: Tracer;
}

/** Public `error` of a job that outlived its time to live. */
export const expiredError = "The video generation expired before it completed.";

/** Budget of the courtesy call that asks a provider to drop a job we gave up on. */
const cancelTimeoutMs = 10_000;

function newGenerationId(): string {
  return `gen-${randomBytes(12).toString("base64url")}`;
}

/**
 * Renews the lease while the job runs. A renewal that finds the lease gone
 * (it lapsed and another worker took the job) stops this run; a renewal that
 * fails (store unreachable) is simply tried again, since the lease outlives
 * two missed renewals.
 */
function keepLease(jobs: VideoJobs, jobId: string, lease: VideoJobLease, onLost: () => void): () => void {
  const timer = setInterval(() => {
    jobs.renewLease(jobId, lease).then(
      (held) => held || onLost(),
      () => undefined,
    );
  }, (lease.seconds * 1000) / 3);
  return () => clearInterval(timer);
}

/** Asks the provider to drop a job we no longer want, without letting its answer matter. */
async function cancelQuietly(provider: VideoProvider, providerJobId: string | undefined): Promise<void> {
  if (providerJobId === undefined) return;
  await provider.cancel(providerJobId, AbortSignal.timeout(cancelTimeoutMs)).catch(() => undefined);
}

/**
 * Creates the handler of the run queue: it takes a lease on the job (a job
 * finished or held by a live worker is left alone, so a duplicate queue
 * entry does nothing), runs it with the provider until it ends or its time to
 * live passes, and settles it. The provider's job id is stored before any
 * polling, so a job recovered after a crash resumes instead of being
 * submitted (and paid for) twice; a shutdown waits for a submit in flight,
 * and a crash during one is covered by the job id sent as the provider's
 * idempotency key. Throws only to have the queue retry: at
 * shutdown, or when the store failed.
 */
export function createVideoJobRunner(options: VideoJobRunnerOptions): (jobId: string) => Promise<void> {
  const { store, settler } = options;

  async function run(job: VideoJobRecord, lease: VideoJobLease, log: Logger, span: Span): Promise<void> {
    const model = options.models.get(job.model);
    if (!model) {
      await settler.finish(job.id, lease.token, { status: "failed", error: `The model ${job.model} is no longer offered.` });
      return;
    }
    const leaseLost = new AbortController();
    const ttl = AbortSignal.timeout(Math.max(0, job.expiresAt.getTime() - Date.now()));
    const stopLease = keepLease(store.videoJobs, job.id, lease, () => leaseLost.abort());
    let providerJobId = job.providerJobId;
    // Submitted by this run but not stored (the lease was gone): no other worker can know of it.
    let orphan: string | undefined;
    try {
      // The provider's own work (submit, polls, download or render), apart from the queue's.
      const providerSpan = startChildSpan(options.tracer, span, `video.provider ${job.model}`, SpanKind.CLIENT, { "switchboard.resumed": providerJobId !== undefined });
      const result = await runVideoJob({
        provider: model.provider,
        request: job.request as unknown as VideoGenerationRequest,
        dataDir: options.dataDir,
        jobId: job.id,
        providerJobId,
        idempotencyKey: job.id,
        // Not the shutdown: an accepted submit we stopped waiting for would be billed and never polled.
        submitSignal: AbortSignal.any([ttl, leaseLost.signal]),
        onSubmitted: async (submitted) => {
          providerJobId = submitted;
          if (!(await store.videoJobs.setProviderJobId(job.id, lease.token, submitted))) {
            orphan = submitted;
            leaseLost.abort();
          }
          leaseLost.signal.throwIfAborted();
          log.info({ provider_job_id: submitted }, "video job submitted to the provider");
        },
        signal: AbortSignal.any([options.shutdown, ttl, leaseLost.signal]),
      }).then(
        (done) => (endSpan(providerSpan), done),
        (error: unknown) => {
          endSpan(providerSpan, error);
          throw error;
        },
      );
      const outputs = result.outputs.map(({ path: _path, ...output }) => output);
      if (await settler.finish(job.id, lease.token, { status: "completed", outputs })) log.info({ outputs: outputs.length }, "video job completed");
    } catch (error) {
      if (leaseLost.signal.aborted) {
        // Another worker holds the job now, resuming any stored provider job: only an orphan is ours to cancel.
        await cancelQuietly(model.provider, orphan);
        log.warn("video job lease lost; another worker has the job");
      } else if (options.shutdown.aborted) {
        await store.videoJobs.releaseLease(job.id, lease.token);
        throw error;
      } else if (ttl.aborted) {
        await cancelQuietly(model.provider, providerJobId);
        if (await settler.finish(job.id, lease.token, { status: "expired", error: expiredError })) log.info("video job expired");
      } else if (error instanceof VideoProviderError) {
        if (await settler.finish(job.id, lease.token, { status: "failed", error: error.message })) log.info({ kind: error.kind }, "video job failed");
      } else {
        // Not the provider's doing (the store or the disk failed): hand the job back for the queue to retry.
        await store.videoJobs.releaseLease(job.id, lease.token).catch(() => undefined);
        throw error;
      }
    } finally {
      stopLease();
    }
  }

  return async (jobId) => {
    const lease: VideoJobLease = { token: randomUUID(), owner: options.owner, seconds: options.leaseSeconds };
    const job = await store.videoJobs.claim(jobId, lease, newGenerationId());
    if (!job) return;
    const traceId = job.trace?.trace_id;
    const log = options.logger.child({
      job_id: job.id,
      model: job.model,
      ...(job.sessionId && { session_id: job.sessionId }),
      ...(typeof traceId === "string" && { trace_id: traceId }),
    });
    log.info({ claims: job.claims, resumed: job.providerJobId !== undefined }, "video job started");
    const span = startChildSpan(options.tracer, contextOfTraceparent(job.traceparent), "video.job", SpanKind.CONSUMER, {
      "switchboard.job_id": job.id,
      "switchboard.model": job.model,
      "switchboard.claims": job.claims,
    });
    let failure: unknown;
    try {
      await run(job, lease, log, span);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // The status the run left: one query, made only when the span is recorded.
      if (span.isRecording()) span.setAttribute("switchboard.outcome", (await store.videoJobs.get(job.id).catch(() => undefined))?.status ?? "unknown");
      endSpan(span, failure);
    }
  };
}
