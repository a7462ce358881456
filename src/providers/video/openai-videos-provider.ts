import type { ForwardableMember } from "./video-models-file.js";
import type { VideoModelCapabilities } from "./video-model.js";
import type { VideoGenerationRequest, VideoOutput, VideoPollResult, VideoProvider, VideoProviderJobStatus } from "./video-provider.js";
import { VideoProviderError, type VideoProviderErrorKind } from "./video-provider-error.js";
import { formatVideoSize, parseVideoSize, resolveVideoSize } from "./video-size.js";

/** Options for {@link createOpenAiVideosProvider}. */
export interface OpenAiVideosProviderOptions {
  /** Provider slug: the key read in the request's `provider.options`. */
  slug: string;
  /** Base URL up to the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** Extra headers sent on every call (organization, project, …). */
  headers?: Record<string, string>;
  upstreamModel: string;
  /** The bound model's capabilities: defaults to send, references to keep. */
  capabilities: VideoModelCapabilities;
  /** Request members sent verbatim besides the OpenAI ones. */
  forward?: readonly ForwardableMember[];
  /** Budget of one submit, poll or cancel call. Default 30 s. */
  timeoutMs?: number;
  /** Budget of a whole content download. Default 10 minutes. */
  downloadTimeoutMs?: number;
  /** Default 5 s: remote generations take minutes. */
  pollIntervalMs?: number;
}

/** Members that identify or trace the caller; never sent upstream, not even through passthrough. */
const neverForwarded = new Set(["user", "session_id", "trace", "callback_url"]);

/** Upstream error text is cut to this length before it can reach a job's public `error`. */
const maxErrorText = 500;

const upstreamStatuses: Record<string, VideoProviderJobStatus> = {
  queued: "in_progress",
  pending: "in_progress",
  in_progress: "in_progress",
  processing: "in_progress",
  running: "in_progress",
  completed: "completed",
  succeeded: "completed",
  failed: "failed",
  cancelled: "failed",
  canceled: "failed",
  expired: "failed",
};

/** The subset of the OpenAI video object this adapter reads. */
interface UpstreamVideo {
  id?: unknown;
  status?: unknown;
  progress?: unknown;
  seconds?: unknown;
  size?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

type Operation = "submit" | "poll" | "download" | "cancel";

function kindForStatus(status: number, operation: Operation): VideoProviderErrorKind {
  if (status === 401 || status === 403) return "authentication";
  if (status === 404) return operation === "submit" ? "invalid_request" : "not_found";
  if (status === 408 || status === 504) return "timeout";
  if (status === 429) return "rate_limited";
  if (status === 529) return "overloaded";
  if (status >= 500) return "unavailable";
  return "invalid_request";
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function textOf(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value.slice(0, maxErrorText) : undefined;
}

async function errorFromResponse(response: Response, operation: Operation): Promise<VideoProviderError> {
  let message: string | undefined;
  let code: string | undefined;
  try {
    const body = (await response.json()) as { error?: { message?: unknown; code?: unknown } };
    message = textOf(body.error?.message);
    code = textOf(body.error?.code);
  } catch {
    // A body that is not the OpenAI error envelope leaves the status to speak.
  }
  return new VideoProviderError(kindForStatus(response.status, operation), `The video provider refused the ${operation} (HTTP ${response.status})${message ? `: ${message}` : "."}`, {
    upstreamStatus: response.status,
    upstreamCode: code,
    retryAfterMs: retryAfterMs(response.headers.get("retry-after")),
  });
}

function failureOf(error: unknown, operation: Operation, caller: AbortSignal | undefined, timeout: AbortSignal): VideoProviderError {
  if (error instanceof VideoProviderError) return error;
  if (caller?.aborted) return new VideoProviderError("aborted", `The ${operation} was aborted.`, { cause: error });
  if (timeout.aborted) return new VideoProviderError("timeout", `The video provider did not answer the ${operation} in time.`, { cause: error });
  return new VideoProviderError("unavailable", `The video provider could not be reached for the ${operation}.`, { cause: error });
}

function firstImageUrl(request: VideoGenerationRequest): string | undefined {
  const frame = request.frame_images?.find((image) => image.frame_type === "first_frame");
  if (frame) return frame.image_url.url;
  for (const reference of request.input_references ?? []) {
    if (reference.type === "image_url") return reference.image_url.url;
  }
  return undefined;
}

function forwardedValue(member: ForwardableMember, request: VideoGenerationRequest, capabilities: VideoModelCapabilities): unknown {
  if (member !== "input_references") return request[member];
  return request.input_references?.filter(
    (reference) =>
      reference.type === "image_url" ||
      (reference.type === "audio_url" && capabilities.audioReferences) ||
      (reference.type === "video_url" && capabilities.videoReferences),
  );
}

/**
 * The JSON body of `POST /videos`: the OpenAI members (`model`, `prompt`,
 * `seconds` as a string, `size`, `input_reference`), then the members the
 * operator forwards, then the caller's `provider.options[slug]` for keys not
 * already set. Built from an allow-list, so nothing identifying the caller
 * leaks even if the request object carries more than its type says.
 */
function buildOpenAiVideoBody(request: VideoGenerationRequest, options: OpenAiVideosProviderOptions): Record<string, unknown> {
  const { capabilities } = options;
  const resolved = resolveVideoSize(request);
  if (!resolved.ok) throw new VideoProviderError("invalid_request", resolved.error);
  const size = resolved.size ? formatVideoSize(resolved.size) : capabilities.defaultSize;
  const imageUrl = firstImageUrl(request);
  const body: Record<string, unknown> = {
    model: options.upstreamModel,
    ...(request.prompt !== undefined && { prompt: request.prompt }),
    seconds: String(request.duration ?? capabilities.defaultDurationSeconds),
    ...(size !== undefined && { size }),
    ...(imageUrl !== undefined && { input_reference: { image_url: imageUrl } }),
  };
  for (const member of options.forward ?? []) {
    const value = forwardedValue(member, request, capabilities);
    if (value !== undefined) body[member] = value;
  }
  const passthrough = request.provider?.options?.[options.slug];
  if (passthrough && typeof passthrough === "object" && !Array.isArray(passthrough)) {
    for (const [key, value] of Object.entries(passthrough)) {
      if (!(key in body) && !neverForwarded.has(key)) body[key] = value;
    }
  }
  return body;
}

function outputsOf(video: UpstreamVideo): VideoOutput[] {
  const size = typeof video.size === "string" ? parseVideoSize(video.size) : undefined;
  const seconds = Number(video.seconds);
  return [
    {
      index: 0,
      contentType: "video/mp4",
      ...(size && { width: size.width, height: size.height }),
      ...(Number.isFinite(seconds) && seconds > 0 && { durationSeconds: seconds }),
    },
  ];
}

function pollResultOf(video: UpstreamVideo): VideoPollResult {
  const status = typeof video.status === "string" ? upstreamStatuses[video.status] : undefined;
  if (!status) throw new VideoProviderError("bad_response", `The video provider reported an unknown status ${JSON.stringify(video.status)}.`);
  const progress = typeof video.progress === "number" && video.progress >= 0 && video.progress <= 100 ? video.progress : undefined;
  if (status === "completed") return { status, progress: 100, outputs: outputsOf(video) };
  if (status === "failed") {
    const reason = textOf(video.error?.message) ?? `The video provider reported the job ${String(video.status)}.`;
    return { status, error: reason };
  }
  return progress === undefined ? { status } : { status, progress };
}

/**
 * Creates a provider for any upstream speaking the OpenAI videos API
 * (`POST /videos`, `GET /videos/{id}`, `GET /videos/{id}/content`,
 * `DELETE /videos/{id}`), bound to one upstream model. Every HTTP failure
 * becomes a {@link VideoProviderError} with a kind the job worker can act on.
 */
export function createOpenAiVideosProvider(options: OpenAiVideosProviderOptions): VideoProvider {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? 30_000;
  const downloadTimeoutMs = options.downloadTimeoutMs ?? 600_000;

  function headers(accept: string, json: boolean, idempotencyKey: string | undefined): Record<string, string> {
    return {
      ...options.headers,
      accept,
      ...(json && { "content-type": "application/json" }),
      ...(idempotencyKey !== undefined && { "idempotency-key": idempotencyKey }),
      ...(options.apiKey && { authorization: `Bearer ${options.apiKey}` }),
    };
  }

  /** One HTTP call; resolves with a 2xx response, whose body the caller must consume or cancel. */
  async function call(
    operation: Operation,
    method: string,
    path: string,
    init: { signal?: AbortSignal; budgetMs: number; body?: unknown; accept?: string; idempotencyKey?: string },
  ) {
    const timeout = AbortSignal.timeout(init.budgetMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: headers(init.accept ?? "application/json", init.body !== undefined, init.idempotencyKey),
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal,
      });
      if (!response.ok) throw await errorFromResponse(response, operation);
      return { response, timeout };
    } catch (error) {
      throw failureOf(error, operation, init.signal, timeout);
    }
  }

  async function callJson(
    operation: Operation,
    method: string,
    path: string,
    signal: AbortSignal | undefined,
    request?: { body: unknown; idempotencyKey?: string },
  ): Promise<UpstreamVideo> {
    const { response, timeout } = await call(operation, method, path, { signal, budgetMs: timeoutMs, ...request });
    let parsed: unknown;
    try {
      parsed = await response.json();
    } catch (error) {
      if (signal?.aborted || timeout.aborted) throw failureOf(error, operation, signal, timeout);
      throw new VideoProviderError("bad_response", `The video provider answered the ${operation} with invalid JSON.`, { cause: error });
    }
    if (typeof parsed !== "object" || parsed === null) throw new VideoProviderError("bad_response", `The video provider answered the ${operation} with no object.`);
    return parsed as UpstreamVideo;
  }

  const jobPath = (providerJobId: string) => `/videos/${encodeURIComponent(providerJobId)}`;

  return {
    slug: options.slug,
    pollIntervalMs: options.pollIntervalMs ?? 5000,
    async submit(request, submitOptions) {
      const video = await callJson("submit", "POST", "/videos", submitOptions?.signal, {
        body: buildOpenAiVideoBody(request, options),
        idempotencyKey: submitOptions?.idempotencyKey,
      });
      if (typeof video.id !== "string" || video.id.length === 0) throw new VideoProviderError("bad_response", "The video provider returned no job id.");
      return { providerJobId: video.id };
    },
    async poll(providerJobId, signal) {
      return pollResultOf(await callJson("poll", "GET", jobPath(providerJobId), signal));
    },
    async *download(providerJobId, index, signal) {
      if (index !== 0) throw new VideoProviderError("not_found", `This provider returns one video per job; index ${index} does not exist.`);
      const { response, timeout } = await call("download", "GET", `${jobPath(providerJobId)}/content`, {
        signal,
        budgetMs: downloadTimeoutMs,
        accept: "application/binary",
      });
      if (!response.body) throw new VideoProviderError("bad_response", "The video provider sent no content.");
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read().catch((error: unknown) => Promise.reject(failureOf(error, "download", signal, timeout)));
          if (done) return;
          yield value;
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
    },
    async cancel(providerJobId, signal) {
      try {
        const { response } = await call("cancel", "DELETE", jobPath(providerJobId), { signal, budgetMs: timeoutMs });
        await response.body?.cancel();
      } catch (error) {
        if (!(error instanceof VideoProviderError && error.kind === "not_found")) throw error;
      }
    },
    async close() {
      // Nothing is pooled here: fetch owns its connections and every call carries its own timeout.
    },
  };
}
