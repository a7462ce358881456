import type { SpeechEngine, SpeechReference, SpeechRequest } from "./speech-engine.js";
import { SpeechProviderError, type SpeechProviderErrorKind } from "./speech-provider-error.js";

/** Options for {@link createOpenAiCompatibleEngine}; one models-file entry, resolved. */
export interface OpenAiCompatibleEngineOptions {
  /** Model id callers use, such as `openai/tts-1`. */
  readonly id: string;
  /** API root ending in the version, such as `https://api.openai.com/v1`; `/audio/speech` is appended. */
  readonly baseUrl: string;
  /** Bearer token; omitted for upstreams that need none. */
  readonly apiKey?: string;
  /** Model name the upstream expects, such as `tts-1`. */
  readonly upstreamModel: string;
  /** Whether the upstream takes `input_references` for voice cloning. */
  readonly supportsCloning: boolean;
  /** Longest wait for the response headers and then between two body chunks. Default 30000 ms. */
  readonly timeoutMs?: number;
  /** For tests and proxies; defaults to the global fetch. */
  readonly fetch?: typeof fetch;
}

/** Request fields the engine sets itself, and observability fields that never leave Switchboard. */
const reservedFields = new Set(["model", "input", "voice", "response_format", "speed", "input_references", "stream_format"]);
const privateFields = new Set(["session_id", "user", "trace"]);
/** Enough of an error body to carry the upstream's message; the rest is dropped. */
const maxErrorBodyBytes = 16 * 1024;

/**
 * Creates an engine for any OpenAI-compatible `POST /audio/speech` endpoint,
 * so operators can add hosted voices by editing the models file. Audio is
 * passed through chunk by chunk as the upstream sends it. `providerOptions`
 * are merged into the upstream body (e.g. `instructions`) under the fields the
 * engine sets; `session_id`, `user` and `trace` are never sent.
 *
 * Upstream failures map to kinds: 400/413/422 → `bad_request` with the
 * upstream's message, 408/504/524 and our own timeout → `timeout`,
 * 429/529 → `overloaded`, 503 → `unavailable`, anything else (other 5xx,
 * 401/403/404 from a misconfigured key or model, network errors) → `provider_error`.
 */
export function createOpenAiCompatibleEngine(options: OpenAiCompatibleEngineOptions): SpeechEngine {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/audio/speech`;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const fetchImpl = options.fetch ?? fetch;
  const connections = new Set<AbortController>();
  let closed = false;

  async function* synthesize(request: SpeechRequest, signal?: AbortSignal): AsyncGenerator<Uint8Array, void, undefined> {
    signal?.throwIfAborted();
    if (closed) throw new SpeechProviderError("unavailable", "The speech engine is shutting down.");
    const references = request.references ?? [];
    if (references.length > 0 && !options.supportsCloning) {
      throw new SpeechProviderError(
        "bad_request",
        `${options.id} does not support voice cloning; remove input_references or choose a model that supports cloning.`,
      );
    }
    const controller = new AbortController();
    connections.add(controller);
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The deadline restarts on every chunk: a long answer may stream for minutes, a stalled one may not.
    const armTimer = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
    };
    const failure = (error: unknown): unknown => {
      if (signal?.aborted) return signal.reason;
      if (error instanceof SpeechProviderError) return error;
      if (timedOut) return new SpeechProviderError("timeout", `${options.id} did not respond within ${timeoutMs} ms.`, { cause: error });
      if (controller.signal.aborted) return new SpeechProviderError("unavailable", "The speech engine is shutting down.", { cause: error });
      return new SpeechProviderError("provider_error", `${options.id} could not be reached.`, { cause: error });
    };
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let drained = false;
    try {
      armTimer();
      const response = await fetchImpl(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: request.format === "mp3" ? "audio/mpeg" : "audio/pcm",
          ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
        },
        body: JSON.stringify(upstreamBody(options.upstreamModel, request, references)),
        signal: controller.signal,
      });
      if (!response.ok) throw await upstreamError(options.id, response);
      if (response.body === null) throw new SpeechProviderError("provider_error", `${options.id} returned no audio.`);
      reader = response.body.getReader();
      for (;;) {
        armTimer();
        const { done, value } = await reader.read();
        if (done) break;
        // The deadline measures the upstream, not a slow reader downstream of us.
        clearTimeout(timer);
        if (value.length > 0) yield value;
      }
      drained = true;
    } catch (error) {
      throw failure(error);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      connections.delete(controller);
      // A consumer that stops early must not leave the upstream socket streaming into nowhere.
      if (!drained) {
        controller.abort();
        await reader?.cancel().catch(() => undefined);
      }
    }
  }

  return {
    id: options.id,
    supportsCloning: options.supportsCloning,
    synthesize,
    async close() {
      closed = true;
      for (const controller of connections) controller.abort();
      connections.clear();
    },
  };
}

function upstreamBody(model: string, request: SpeechRequest, references: readonly SpeechReference[]): Record<string, unknown> {
  const passthrough = Object.entries(request.providerOptions ?? {}).filter(
    ([key]) => !reservedFields.has(key) && !privateFields.has(key),
  );
  return {
    ...Object.fromEntries(passthrough),
    model,
    input: request.input,
    voice: request.voice,
    response_format: request.format,
    ...(request.speed === undefined ? {} : { speed: request.speed }),
    ...(references.length === 0 ? {} : { input_references: references.map(wireReference) }),
  };
}

function wireReference(reference: SpeechReference): Record<string, unknown> {
  if (reference.type === "text") return { type: "text", text: reference.text };
  return { type: reference.type, input_audio: reference.inputAudio };
}

async function upstreamError(id: string, response: Response): Promise<SpeechProviderError> {
  const status = response.status;
  const kind = kindForStatus(status);
  const detail = kind === "bad_request" ? await upstreamMessage(response) : undefined;
  if (detail === undefined) await response.body?.cancel().catch(() => undefined);
  const message =
    kind === "bad_request"
      ? `${id} rejected the request${detail ? `: ${detail}` : "."}`
      : kind === "overloaded"
        ? `${id} is overloaded; retry later.`
        : kind === "unavailable"
          ? `${id} is temporarily unavailable.`
          : kind === "timeout"
            ? `${id} timed out.`
            : `${id} returned an error (HTTP ${status}).`;
  return new SpeechProviderError(kind, message, { upstreamStatus: status });
}

function kindForStatus(status: number): SpeechProviderErrorKind {
  if (status === 400 || status === 413 || status === 422) return "bad_request";
  if (status === 408 || status === 504 || status === 524) return "timeout";
  if (status === 429 || status === 529) return "overloaded";
  if (status === 503) return "unavailable";
  return "provider_error";
}

/** The upstream's own explanation (`{error:{message}}`, `{message}`, `{detail}` or text), bounded. */
async function upstreamMessage(response: Response): Promise<string | undefined> {
  const text = await readBounded(response);
  if (text === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    const found = messageIn(parsed);
    if (found !== undefined) return found;
  } catch {
    // Not JSON: the text itself is the message.
  }
  return text.trim().slice(0, 500);
}

function messageIn(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.message === "string") return record.message;
  if (typeof record.detail === "string") return record.detail;
  if (typeof record.error === "string") return record.error;
  return messageIn(record.error);
}

async function readBounded(response: Response): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    while (bytes < maxErrorBodyBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text.slice(0, maxErrorBodyBytes);
}
