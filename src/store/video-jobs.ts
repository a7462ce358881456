import type { Queryable } from "./database.js";

/** Every status a video job can have; the last four are terminal. */
export const videoJobStatuses = ["pending", "in_progress", "completed", "failed", "cancelled", "expired"] as const;

/** One of {@link videoJobStatuses}. */
export type VideoJobStatus = (typeof videoJobStatuses)[number];

/** A status a job ends in. */
export type VideoJobTerminalStatus = Exclude<VideoJobStatus, "pending" | "in_progress">;

/** One stored output of a completed job; its file is `videoOutputPath(dataDir, jobId, index)`. */
export interface VideoJobOutput {
  index: number;
  contentType: string;
  bytes: number;
  width?: number;
  height?: number;
  durationSeconds?: number;
}

/** A video job as stored. */
export interface VideoJobRecord {
  id: string;
  orgId: string;
  memberId: string;
  model: string;
  /** What the provider is sent, under the public wire names (no session, user, trace or callback). */
  request: Record<string, unknown>;
  callbackUrl?: string;
  sessionId?: string;
  endUser?: string;
  trace?: Record<string, unknown>;
  /** W3C traceparent of the submission's span: the job's work joins that trace. */
  traceparent?: string;
  /** Reserved at submit; refunded when the job does not complete. */
  costUsd: number;
  status: VideoJobStatus;
  generationId?: string;
  providerJobId?: string;
  outputs?: VideoJobOutput[];
  error?: string;
  /** How many times a worker took the job: more than one means it was recovered. */
  claims: number;
  claimedBy?: string;
  createdAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  expiresAt: Date;
}

/** A job without its request: what polling, content and webhooks need. */
export type VideoJobSummary = Omit<VideoJobRecord, "request">;

/** A job as submitted. */
export type NewVideoJob = Pick<VideoJobRecord, "id" | "orgId" | "memberId" | "model" | "request" | "callbackUrl" | "sessionId" | "endUser" | "trace" | "traceparent" | "costUsd"> & {
  /** Time to live: a job not finished by then expires. */
  ttlSeconds: number;
};

/** A worker's hold on a job; every write of a running job is fenced by its token. */
export interface VideoJobLease {
  token: string;
  /** The replica holding it, for operators. */
  owner: string;
  seconds: number;
}

/** How a job ends. */
export interface VideoJobOutcome {
  status: VideoJobTerminalStatus;
  outputs?: VideoJobOutput[];
  error?: string;
}

type JobRow = {
  id: string;
  org_id: string;
  member_id: string;
  model: string;
  request: Record<string, unknown>;
  callback_url: string | null;
  session_id: string | null;
  end_user: string | null;
  trace: Record<string, unknown> | null;
  traceparent: string | null;
  cost_usd: number;
  status: VideoJobStatus;
  generation_id: string | null;
  provider_job_id: string | null;
  outputs: VideoJobOutput[] | null;
  error: string | null;
  claims: number;
  claimed_by: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  expires_at: Date;
};

/** Every column but `request`, which may hold megabytes of data URIs that polling never needs. */
const summaryColumns = `id, org_id, member_id, model, callback_url, session_id, end_user, trace, traceparent, cost_usd, status, generation_id,
  provider_job_id, outputs, error, claims, claimed_by, created_at, started_at, finished_at, expires_at`;
const columns = `${summaryColumns}, request`;

/** Not finished, and not held by a worker that is still alive. */
const unfinishedAndUnheld = "status IN ('pending', 'in_progress') AND (lease_expires_at IS NULL OR lease_expires_at < now())";

// jsonb parameters go as JSON text: node-postgres would turn a JS array into
// a PostgreSQL array literal, and both drivers parse text as JSON.
function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function record(row: JobRow): VideoJobRecord {
  return { ...summary(row), request: row.request };
}

function summary(row: Omit<JobRow, "request">): VideoJobSummary {
  return {
    id: row.id,
    orgId: row.org_id,
    memberId: row.member_id,
    model: row.model,
    ...(row.callback_url !== null && { callbackUrl: row.callback_url }),
    ...(row.session_id !== null && { sessionId: row.session_id }),
    ...(row.end_user !== null && { endUser: row.end_user }),
    ...(row.trace !== null && { trace: row.trace }),
    ...(row.traceparent !== null && { traceparent: row.traceparent }),
    costUsd: row.cost_usd,
    status: row.status,
    ...(row.generation_id !== null && { generationId: row.generation_id }),
    ...(row.provider_job_id !== null && { providerJobId: row.provider_job_id }),
    ...(row.outputs !== null && { outputs: row.outputs }),
    ...(row.error !== null && { error: row.error }),
    claims: row.claims,
    ...(row.claimed_by !== null && { claimedBy: row.claimed_by }),
    createdAt: row.created_at,
    ...(row.started_at !== null && { startedAt: row.started_at }),
    ...(row.finished_at !== null && { finishedAt: row.finished_at }),
    expiresAt: row.expires_at,
  };
}

/**
 * The video_jobs table: the source of truth for a job's status. The queue
 * only says "run this job"; a worker then takes a lease here (renewed while it
 * runs), so a job is run by one worker at a time across replicas, and a job
 * whose worker died is noticed when its lease lapses.
 */
export function createVideoJobs(db: Queryable) {
  return {
    async insert(job: NewVideoJob): Promise<VideoJobSummary> {
      const rows = await db.query<Omit<JobRow, "request">>(
        `INSERT INTO video_jobs (id, org_id, member_id, model, request, callback_url, session_id, end_user, trace, traceparent, cost_usd, status, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', now() + make_interval(secs => $12))
         RETURNING ${summaryColumns}`,
        [
          job.id,
          job.orgId,
          job.memberId,
          job.model,
          json(job.request),
          job.callbackUrl ?? null,
          job.sessionId ?? null,
          job.endUser ?? null,
          json(job.trace),
          job.traceparent ?? null,
          job.costUsd,
          job.ttlSeconds,
        ],
      );
      return summary(rows[0]);
    },
    /** The job `id` of organization `orgId`, without its request; another organization's job is not found. */
    async find(orgId: string, id: string): Promise<VideoJobSummary | undefined> {
      // PostgreSQL refuses U+0000 in text, so no stored id holds it.
      if (id.includes("\u0000")) return undefined;
      const rows = await db.query<Omit<JobRow, "request">>(`SELECT ${summaryColumns} FROM video_jobs WHERE org_id = $1 AND id = $2`, [orgId, id]);
      return rows[0] && summary(rows[0]);
    },
    /** The job `id`, whatever its organization (workers). */
    async get(id: string): Promise<VideoJobRecord | undefined> {
      const rows = await db.query<JobRow>(`SELECT ${columns} FROM video_jobs WHERE id = $1`, [id]);
      return rows[0] && record(rows[0]);
    },
    /**
     * Takes the job for a worker when it is unfinished, within its time to
     * live, and nobody alive holds it; it becomes `in_progress` with a
     * generation id on its first claim. Undefined otherwise (an overdue job is
     * the sweeper's to expire).
     */
    async claim(id: string, lease: VideoJobLease, generationId: string): Promise<VideoJobRecord | undefined> {
      const rows = await db.query<JobRow>(
        `UPDATE video_jobs
            SET status = 'in_progress', generation_id = coalesce(generation_id, $2), started_at = coalesce(started_at, now()),
                claims = claims + 1, claimed_by = $3, lease_token = $4, lease_expires_at = now() + make_interval(secs => $5)
          WHERE id = $1 AND ${unfinishedAndUnheld} AND expires_at > now()
          RETURNING ${columns}`,
        [id, generationId, lease.owner, lease.token, lease.seconds],
      );
      return rows[0] && record(rows[0]);
    },
    /** Extends a lease; false when it was lost (lapsed and taken, or the job finished). */
    async renewLease(id: string, lease: VideoJobLease): Promise<boolean> {
      const rows = await db.query(
        `UPDATE video_jobs SET lease_expires_at = now() + make_interval(secs => $3)
          WHERE id = $1 AND lease_token = $2 AND status IN ('pending', 'in_progress') RETURNING id`,
        [id, lease.token, lease.seconds],
      );
      return rows.length > 0;
    },
    /** Gives a job back without finishing it (shutdown), so the next worker need not wait for the lease to lapse. */
    async releaseLease(id: string, token: string): Promise<void> {
      await db.query("UPDATE video_jobs SET lease_token = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_token = $2", [id, token]);
    },
    /** Records the provider's id before polling starts, so a recovered job resumes instead of submitting twice. */
    async setProviderJobId(id: string, token: string, providerJobId: string): Promise<boolean> {
      const rows = await db.query("UPDATE video_jobs SET provider_job_id = $3 WHERE id = $1 AND lease_token = $2 RETURNING id", [id, token, providerJobId]);
      return rows.length > 0;
    },
    /**
     * Moves an unfinished job to a terminal status, once: by the worker
     * holding `token`, or (no token) only when nobody alive holds the job.
     * Returns the finished job, or undefined when it was not this call's to finish.
     */
    async finish(id: string, token: string | undefined, outcome: VideoJobOutcome): Promise<VideoJobSummary | undefined> {
      const holder = token === undefined ? unfinishedAndUnheld : "status IN ('pending', 'in_progress') AND lease_token = $5";
      const rows = await db.query<Omit<JobRow, "request">>(
        `UPDATE video_jobs
            SET status = $2, outputs = $3, error = $4, finished_at = now(), lease_token = NULL, lease_expires_at = NULL
          WHERE id = $1 AND ${holder}
          RETURNING ${summaryColumns}`,
        [id, outcome.status, json(outcome.outputs), outcome.error ?? null, ...(token === undefined ? [] : [token])],
      );
      return rows[0] && summary(rows[0]);
    },
    /**
     * Frees the leases of unfinished jobs whose worker is gone (lease lapsed),
     * or of every unfinished job when `all` (the embedded store at start: its
     * single process is the only worker there ever was). Returns their ids, to
     * queue them again; concurrent callers each get distinct ids.
     */
    async releaseOrphans(all: boolean): Promise<string[]> {
      const rows = await db.query<{ id: string }>(
        `UPDATE video_jobs SET lease_token = NULL, lease_expires_at = NULL
          WHERE status IN ('pending', 'in_progress') AND ${all ? "TRUE" : "lease_expires_at < now()"}
          RETURNING id`,
      );
      return rows.map((row) => row.id);
    },
    /** Of these jobs, the unfinished ones no live worker holds. */
    async unheld(ids: readonly string[]): Promise<string[]> {
      if (ids.length === 0) return [];
      const rows = await db.query<{ id: string }>(`SELECT id FROM video_jobs WHERE id = ANY($1::text[]) AND ${unfinishedAndUnheld}`, [ids]);
      return rows.map((row) => row.id);
    },
    /** How many jobs wait (`pending`) and run (`in_progress`): the queue's depth, read on each metrics scrape through the partial index of unfinished jobs. */
    async countUnfinished(): Promise<Record<"pending" | "in_progress", number>> {
      const rows = await db.query<{ status: "pending" | "in_progress"; jobs: number }>(
        `SELECT status, count(*)::int AS jobs FROM video_jobs WHERE status IN ('pending', 'in_progress') GROUP BY status`,
      );
      const counts = { pending: 0, in_progress: 0 };
      for (const row of rows) counts[row.status] = Number(row.jobs);
      return counts;
    },
    /** Unfinished jobs past their time to live that no live worker holds (a held one expires itself). */
    async overdue(limit: number): Promise<string[]> {
      const rows = await db.query<{ id: string }>(`SELECT id FROM video_jobs WHERE ${unfinishedAndUnheld} AND expires_at < now() ORDER BY expires_at LIMIT $1`, [limit]);
      return rows.map((row) => row.id);
    },
  };
}

/** The video_jobs table. */
export type VideoJobs = ReturnType<typeof createVideoJobs>;
