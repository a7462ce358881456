import type { VideoJob } from "../gen/switchboard/v1/video_pb.js";

/** The job object of `/api/v1/videos` (DESIGN.md §5), absent members omitted rather than null. */
export interface VideoJobJson {
  id: string;
  polling_url: string;
  status: string;
  generation_id?: string;
  unsigned_urls?: string[];
  usage?: { cost: number; is_byok: boolean };
  error?: string;
}

/**
 * Renders a job message as the public JSON by hand, since protobuf's JSON
 * mapping would drop an empty `unsigned_urls` and name members in camelCase.
 * The core decides which members a job has; this only spells them.
 */
export function videoJobJson(job: VideoJob): VideoJobJson {
  return {
    id: job.id,
    polling_url: job.pollingUrl,
    status: job.status,
    ...(job.generationId !== undefined && { generation_id: job.generationId }),
    ...(job.status === "completed" && { unsigned_urls: job.unsignedUrls }),
    ...(job.usage && { usage: { cost: job.usage.cost, is_byok: job.usage.isByok } }),
    ...(job.error !== undefined && { error: job.error }),
  };
}
