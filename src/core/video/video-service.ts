import type { Span, Tracer } from "@opentelemetry/api";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { GetVideoContentResponseSchema, VideoService } from "../../gen/switchboard/v1/video_pb.js";
import { videoOutputPath, type VideoModelRegistry } from "../../providers/video/index.js";
import { newId } from "../../store/ids.js";
import type { JobQueue } from "../../store/job-queue.js";
import { createOrganizations } from "../../store/organizations.js";
import type { Store } from "../../store/store.js";
import { createVideoJobs, type VideoJobSummary } from "../../store/video-jobs.js";
import { noteGenerationId } from "../call-observer.js";
import { callSpanOf, endSpan, traceparentOf } from "../call-tracing.js";
import { startTracedOperation } from "../trace-metadata.js";
import { callerOf, type Caller } from "../caller.js";
import { catalogueError } from "../error-catalogue.js";
import { shownId } from "../text-rules.js";
import type { RateLimiter } from "../rate-limiter.js";
import { videoJobMessage } from "./video-job-message.js";
import { videoLimits } from "./video-limits.js";
import { videoQueues, type VideoRunMessage } from "./video-queues.js";
import { parseVideoRequest, type ValidatedVideoRequest } from "./video-request.js";

/** What the video service is built from. */
export interface VideoServiceOptions {
  /** Spans of this service's own work, under each call's span. */
  tracer: Tracer;
  store: Pick<Store, "db" | "videoJobs">;
  models: Pick<VideoModelRegistry, "get" | "list">;
  queue: Pick<JobQueue, "send" | "notify">;
  /** Submissions per member. */
  limiter: RateLimiter;
  /** Where workers store outputs (`dataDir/videos/<jobId>/`). */
  dataDir: string;
  /** A job not finished this long after submission expires. */
  ttlSeconds: number;
  /** One line per submission: ids, model, cost; never the prompt. */
  logger?: Pick<Logger, "info">;
  /** Webhooks may go to private, loopback and link-local addresses (`WEBHOOK_ALLOW_PRIVATE=1`). */
  allowPrivateDestinations?: boolean;
}

function contentStart(contentLength: number) {
  return create(GetVideoContentResponseSchema, { event: { case: "start", value: { contentType: "video/mp4", contentLength: BigInt(contentLength) } } });
}

function contentData(data: Uint8Array) {
  return create(GetVideoContentResponseSchema, { event: { case: "data", value: data } });
}

/** The size of an output's file, or undefined when it is gone (another replica's disk, or cleaned up). */
async function fileSize(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * VideoService: every rule of video generation jobs. A submission is
 * validated and priced, its price reserved from the organization's credits
 * (402 when short) and the job queued, all in one transaction: a job is
 * accepted paid for and queued, or not at all. Jobs are visible to their
 * organization only; another organization's job is not found.
 */
export function createVideoService(options: VideoServiceOptions): ServiceImpl<typeof VideoService> {
  const { store, queue } = options;

  async function ownJob(orgId: string, id: string): Promise<VideoJobSummary> {
    if (!id) throw catalogueError("bad_request", "id is required.");
    const job = await store.videoJobs.find(orgId, id);
    if (!job) throw catalogueError("not_found", `Video job ${shownId(id)} not found.`);
    return job;
  }

  /** Takes a submission from the member's rate limit, then charges, stores and queues the job in one transaction. */
  async function submit(validated: ValidatedVideoRequest, caller: Caller, span: Span) {
    await options.limiter.consume(caller.memberId);
    const job = await store.db.transaction(async (tx) => {
      if (!(await createOrganizations(tx).charge(caller.orgId, validated.costUsd))) {
        throw catalogueError("insufficient_credits", `This job costs ${validated.costUsd} USD, more than the organization's remaining credits.`);
      }
      const inserted = await createVideoJobs(tx).insert({
        id: newId("vid"),
        orgId: caller.orgId,
        memberId: caller.memberId,
        model: validated.model.id,
        request: { ...validated.generation },
        callbackUrl: validated.callbackUrl,
        sessionId: validated.sessionId,
        endUser: validated.user,
        trace: validated.trace,
        traceparent: traceparentOf(span),
        costUsd: validated.costUsd,
        ttlSeconds: options.ttlSeconds,
      });
      await queue.send(videoQueues.run, { jobId: inserted.id } satisfies VideoRunMessage, tx);
      return inserted;
    });
    queue.notify(videoQueues.run);
    options.logger?.info({ job_id: job.id, org_id: caller.orgId, model: job.model, cost: job.costUsd, session_id: job.sessionId }, "video job accepted");
    return { job: videoJobMessage(job) };
  }

  return {
    async createVideo(request, context) {
      const caller = callerOf(context);
      const validated = parseVideoRequest(request, {
        models: options.models,
        sessionHeader: context.requestHeader.get("x-session-id"),
        allowPrivateDestinations: options.allowPrivateDestinations,
      });
      const span = startTracedOperation(options.tracer, callSpanOf(context), "video.submit", validated);
      span.setAttribute("switchboard.model", validated.model.id);
      let failure: unknown;
      try {
        return await submit(validated, caller, span);
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        endSpan(span, failure);
      }
    },

    async getVideo(request, context) {
      const job = await ownJob(callerOf(context).orgId, request.id);
      noteGenerationId(context, job.generationId);
      return { job: videoJobMessage(job) };
    },

    async *getVideoContent(request, context) {
      const job = await ownJob(callerOf(context).orgId, request.id);
      noteGenerationId(context, job.generationId);
      const index = request.index ?? 0;
      if (job.status !== "completed") throw catalogueError("not_found", `Video job ${job.id} has no content: it is ${job.status}.`);
      if (!job.outputs?.some((output) => output.index === index)) throw catalogueError("not_found", `Video job ${job.id} has no output ${index}.`);
      const path = videoOutputPath(options.dataDir, job.id, index);
      const size = await fileSize(path);
      if (size === undefined) throw catalogueError("not_found", `The content of video job ${job.id} is no longer available.`);
      yield contentStart(size);
      for await (const chunk of createReadStream(path, { highWaterMark: videoLimits.contentChunkBytes, signal: context.signal })) {
        yield contentData(chunk as Buffer);
      }
    },
  };
}
