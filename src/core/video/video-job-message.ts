import { create } from "@bufbuild/protobuf";
import { VideoJobSchema, type VideoJob } from "../../gen/switchboard/v1/video_pb.js";
import type { VideoTerminalStatus, VideoWebhookJob } from "../../providers/webhook/index.js";
import type { VideoJobSummary } from "../../store/video-jobs.js";

/** The public path of a job, polled by clients (the spec's `polling_url`). */
function videoJobPath(jobId: string): string {
  return `/api/v1/videos/${jobId}`;
}

/** The public path of one output of a completed job; it needs the caller's key, hence "unsigned". */
function videoContentPath(jobId: string, index: number): string {
  return `${videoJobPath(jobId)}/content?index=${index}`;
}

function isTerminal(status: VideoJobSummary["status"]): status is VideoTerminalStatus {
  return status !== "pending" && status !== "in_progress";
}

/**
 * The job as callers see it, members present only once they apply:
 * `generation_id` once a worker took the job, `unsigned_urls` and `usage` once
 * it completed, `error` once it failed, was cancelled or expired. No keys
 * of our own (BYOK) exist yet, so `is_byok` is always false.
 */
export function videoJobMessage(job: VideoJobSummary): VideoJob {
  const completed = job.status === "completed";
  return create(VideoJobSchema, {
    id: job.id,
    pollingUrl: videoJobPath(job.id),
    status: job.status,
    generationId: job.generationId,
    ...(completed && {
      usage: { cost: job.costUsd, isByok: false },
      unsignedUrls: (job.outputs ?? []).map((output) => videoContentPath(job.id, output.index)),
    }),
    ...(isTerminal(job.status) && !completed && { error: job.error }),
  });
}

/** The job as its webhook reports it; undefined while it is still running. */
export function videoWebhookJob(job: VideoJobSummary): VideoWebhookJob | undefined {
  if (!isTerminal(job.status)) return undefined;
  const message = videoJobMessage(job);
  return {
    id: job.id,
    status: job.status,
    ...(message.generationId !== undefined && { generation_id: message.generationId }),
    model: job.model,
    ...(job.status === "completed" ? { unsigned_urls: message.unsignedUrls } : { error: message.error }),
    ...(message.usage && { usage: { cost: message.usage.cost, is_byok: message.usage.isByok } }),
  };
}
