import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the fake upstream received. */
export interface UpstreamRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body?: Record<string, unknown>;
}

/** A canned answer that overrides the next request. */
export interface CannedAnswer {
  /** Omitted: the normal answer, after `delayMs`. */
  status?: number;
  delayMs?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Never answer: the client must time out. */
  hang?: boolean;
}

/** A local upstream speaking the OpenAI videos API closely enough for the adapter. */
export interface FakeOpenAiVideos {
  baseUrl: string;
  requests: UpstreamRequest[];
  /** The MP4 served by `/content` (any bytes: the adapter does not parse them). */
  content: Buffer;
  /** Answers for the next requests, before the normal behaviour resumes. */
  answerNext(...answers: CannedAnswer[]): void;
  /** Jobs started; a submit repeating an `Idempotency-Key` gets the job it started before, as OpenAI-style APIs do. */
  jobsStarted(): number;
  /** Resolves when a content response closed before it was fully sent. */
  contentAborted(): Promise<void>;
  close(): Promise<void>;
}

interface Job {
  id: string;
  polls: number;
  model: string;
  seconds: string;
  size: string;
  prompt: string;
}

/** Polls a job needs before it completes: queued, then in_progress, then completed. */
const pollsToComplete = 2;

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

function videoObject(job: Job) {
  const status = job.polls === 0 ? "queued" : job.polls < pollsToComplete ? "in_progress" : job.prompt.includes("forbidden") ? "failed" : "completed";
  return {
    id: job.id,
    object: "video",
    model: job.model,
    status,
    progress: status === "completed" ? 100 : job.polls * 40,
    created_at: 1_700_000_000,
    completed_at: status === "completed" ? 1_700_000_100 : null,
    expires_at: null,
    prompt: job.prompt,
    remixed_from_video_id: null,
    seconds: job.seconds,
    size: job.size,
    error: status === "failed" ? { code: "moderation_blocked", message: "Your request was blocked by our moderation system." } : null,
  };
}

/** Starts the fake upstream on 127.0.0.1; it requires `Authorization: Bearer <apiKey>`. */
export async function startFakeOpenAiVideos(apiKey: string): Promise<FakeOpenAiVideos> {
  const requests: UpstreamRequest[] = [];
  const canned: CannedAnswer[] = [];
  const jobs = new Map<string, Job>();
  const idempotentJobs = new Map<string, string>();
  let started = 0;
  const content = Buffer.alloc(300_000, 0);
  for (let i = 0; i < content.length; i++) content[i] = (i * 31) & 0xff;
  let onContentAborted: () => void = () => undefined;
  const contentAbortedPromise = new Promise<void>((resolve) => (onContentAborted = resolve));

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const raw = Buffer.concat(chunks).toString();
      const path = request.url ?? "";
      requests.push({ method: request.method ?? "", path, headers: request.headers, ...(raw && { body: JSON.parse(raw) }) });
      const answer = canned.shift();
      if (answer?.hang) return;
      if (answer?.status === undefined && answer?.delayMs !== undefined) {
        setTimeout(() => answerNormally(request, path, raw, response), answer.delayMs);
        return;
      }
      if (answer?.status !== undefined) {
        response.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
        response.end(answer.body ?? "");
        return;
      }
      answerNormally(request, path, raw, response);
    });
  });

  function answerNormally(request: IncomingMessage, path: string, raw: string, response: ServerResponse): void {
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      send(response, 401, { error: { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" } });
      return;
    }
    const idempotencyKey = request.headers["idempotency-key"];
    route(request.method ?? "", path, raw ? JSON.parse(raw) : {}, typeof idempotencyKey === "string" ? idempotencyKey : undefined, response);
  }

  function route(method: string, path: string, body: Record<string, unknown>, idempotencyKey: string | undefined, response: ServerResponse): void {
    const match = /^\/v1\/videos(?:\/([^/?]+))?(\/content)?(?:\?.*)?$/.exec(path);
    const job = match?.[1] ? jobs.get(decodeURIComponent(match[1])) : undefined;
    const repeated = idempotencyKey === undefined ? undefined : jobs.get(idempotentJobs.get(idempotencyKey) ?? "");
    if (method === "POST" && match && !match[1] && repeated) {
      send(response, 200, videoObject(repeated));
    } else if (method === "POST" && match && !match[1]) {
      started++;
      if (idempotencyKey !== undefined) idempotentJobs.set(idempotencyKey, `video_${started}`);
      const created: Job = {
        id: `video_${started}`,
        polls: 0,
        model: String(body.model),
        seconds: String(body.seconds ?? "4"),
        size: String(body.size ?? "720x1280"),
        prompt: String(body.prompt ?? ""),
      };
      jobs.set(created.id, created);
      send(response, 200, videoObject(created));
    } else if (!job) {
      send(response, 404, { error: { message: "Video not found.", type: "invalid_request_error", code: null } });
    } else if (method === "GET" && !match?.[2]) {
      const answer = videoObject(job);
      job.polls++;
      send(response, 200, answer);
    } else if (method === "GET") {
      streamContent(response);
    } else if (method === "DELETE") {
      jobs.delete(job.id);
      send(response, 200, { id: job.id, object: "video.deleted", deleted: true });
    }
  }

  function streamContent(response: ServerResponse): void {
    response.writeHead(200, { "content-type": "video/mp4", "content-length": String(content.length) });
    let offset = 0;
    response.on("close", () => {
      if (offset < content.length) onContentAborted();
    });
    // Paced, so a client that stops reading early is noticed before everything was sent.
    const pump = () => {
      if (response.destroyed) return;
      const piece = content.subarray(offset, offset + 16_384);
      offset += piece.length;
      if (offset >= content.length) response.end(piece);
      else response.write(piece, () => setTimeout(pump, 2));
    };
    pump();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    content,
    answerNext: (...answers) => canned.push(...answers),
    jobsStarted: () => started,
    contentAborted: () => contentAbortedPromise,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
