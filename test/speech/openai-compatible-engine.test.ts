import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createOpenAiCompatibleEngine, type OpenAiCompatibleEngineOptions } from "../../src/providers/speech/openai-compatible-engine.js";
import type { SpeechEngine, SpeechRequest } from "../../src/providers/speech/speech-engine.js";
import { SpeechProviderError } from "../../src/providers/speech/speech-provider-error.js";
import {
  fakeApiKey,
  fakeChunkBytes,
  fakeChunkCount,
  startFakeOpenAiSpeechServer,
  type FakeOpenAiSpeechServer,
} from "./fake-openai-speech-server.js";

let server: FakeOpenAiSpeechServer;
const engines: SpeechEngine[] = [];

beforeAll(async () => {
  server = await startFakeOpenAiSpeechServer();
});

afterAll(async () => {
  await Promise.all(engines.map((engine) => engine.close()));
  await server.close();
});

function engine(overrides: Partial<OpenAiCompatibleEngineOptions> = {}): SpeechEngine {
  const created = createOpenAiCompatibleEngine({
    id: "test/tts",
    baseUrl: server.baseUrl,
    apiKey: fakeApiKey,
    upstreamModel: "tts-1",
    supportsCloning: false,
    timeoutMs: 2000,
    ...overrides,
  });
  engines.push(created);
  return created;
}

const request: SpeechRequest = { input: "Hello there.", voice: "alloy", format: "pcm" };

async function collect(iterable: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return chunks;
}

async function failure(iterable: AsyncIterable<Uint8Array>): Promise<SpeechProviderError> {
  const error = await collect(iterable).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SpeechProviderError);
  return error as SpeechProviderError;
}

describe("openai-compatible speech engine", () => {
  test("streams the upstream's bytes through, chunk by chunk", async () => {
    const arrivals: number[] = [];
    const chunks: Uint8Array[] = [];
    for await (const chunk of engine().synthesize(request)) {
      arrivals.push(performance.now());
      chunks.push(chunk);
    }
    const bytes = Buffer.concat(chunks);
    expect(bytes.length).toBe(fakeChunkBytes * fakeChunkCount);
    expect(bytes[0]).toBe(1);
    expect(bytes.at(-1)).toBe(fakeChunkCount);
    // The fake pauses 20 ms between chunks; buffering the whole body would deliver them together.
    expect(chunks.length).toBeGreaterThan(1);
    expect(arrivals.at(-1)! - arrivals[0]).toBeGreaterThan(40);
  });

  test("sends the OpenAI body with the upstream model and format, and never session_id, user or trace", async () => {
    await collect(
      engine().synthesize({
        input: "Bonjour.",
        voice: "nova",
        format: "mp3",
        speed: 1.25,
        providerOptions: { instructions: "Speak warmly.", model: "hijack", session_id: "s-1", user: "u-1", trace: { trace_id: "t" } },
      }),
    );
    const received = server.requests.at(-1)!;
    expect(received.body).toEqual({
      instructions: "Speak warmly.",
      model: "tts-1",
      input: "Bonjour.",
      voice: "nova",
      response_format: "mp3",
      speed: 1.25,
    });
    expect(received.headers.authorization).toBe(`Bearer ${fakeApiKey}`);
    expect(JSON.stringify(received.headers)).not.toContain("s-1");
  });

  test("refuses cloning references unless the model supports cloning, and forwards them when it does", async () => {
    const references = [
      { type: "input_audio", inputAudio: { data: "data:audio/wav;base64,UklGRg==", format: "wav" } },
      { type: "text", text: "Reference transcript." },
    ];
    const refused = await failure(engine().synthesize({ ...request, references }));
    expect(refused.kind).toBe("bad_request");
    expect(refused.message).toMatch(/does not support voice cloning/);

    const before = server.requests.length;
    await collect(engine({ supportsCloning: true }).synthesize({ ...request, references }));
    expect(server.requests.length).toBe(before + 1);
    expect(server.requests.at(-1)!.body.input_references).toEqual([
      { type: "input_audio", input_audio: { data: "data:audio/wav;base64,UklGRg==", format: "wav" } },
      { type: "text", text: "Reference transcript." },
    ]);
  });

  test.each([
    [400, "bad_request"],
    [422, "bad_request"],
    [401, "provider_error"],
    [500, "provider_error"],
    [502, "provider_error"],
    [503, "unavailable"],
    [504, "timeout"],
    [429, "overloaded"],
    [529, "overloaded"],
  ] as const)("maps upstream HTTP %i to %s", async (status, kind) => {
    const error = await failure(engine().synthesize({ ...request, voice: `status-${status}` }));
    expect(error.kind).toBe(kind);
    expect(error.upstreamStatus).toBe(status);
  });

  test("a 400 carries the upstream's message for the caller; other failures do not leak upstream text", async () => {
    const badRequest = await failure(engine().synthesize({ ...request, voice: "status-400" }));
    expect(badRequest.message).toBe("test/tts rejected the request: Upstream says 400 for voice status-400");
    const serverError = await failure(engine().synthesize({ ...request, voice: "status-500" }));
    expect(serverError.message).toBe("test/tts returned an error (HTTP 500).");
  });

  test("times out when the upstream never answers", async () => {
    const started = performance.now();
    const error = await failure(engine({ timeoutMs: 300 }).synthesize({ ...request, voice: "hang" }));
    expect(error.kind).toBe("timeout");
    expect(error.message).toMatch(/did not respond within 300 ms/);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test("times out when the upstream stalls mid-stream, after the first bytes went out", async () => {
    const chunks: Uint8Array[] = [];
    const error = await (async () => {
      try {
        for await (const chunk of engine({ timeoutMs: 300 }).synthesize({ ...request, voice: "stall" })) chunks.push(chunk);
      } catch (caught) {
        return caught;
      }
    })();
    expect(chunks.length).toBe(1);
    expect(error).toBeInstanceOf(SpeechProviderError);
    expect((error as SpeechProviderError).kind).toBe("timeout");
  });

  test("a slow reader is not mistaken for a stalled upstream", async () => {
    let bytes = 0;
    for await (const chunk of engine({ timeoutMs: 100 }).synthesize(request)) {
      bytes += chunk.length;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    expect(bytes).toBe(fakeChunkBytes * fakeChunkCount);
  });

  test("an unreachable upstream is a provider error", async () => {
    const error = await failure(engine({ baseUrl: "http://127.0.0.1:9/v1" }).synthesize(request));
    expect(error.kind).toBe("provider_error");
  });

  test("stopping early closes the upstream connection", async () => {
    const closed = server.nextClientClose();
    for await (const chunk of engine().synthesize(request)) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    await closed;
  });

  test("the caller's abort rejects with the caller's reason and closes the connection", async () => {
    const controller = new AbortController();
    const reason = new Error("client went away");
    const closed = server.nextClientClose();
    const error = await (async () => {
      try {
        for await (const chunk of engine().synthesize({ ...request, voice: "stall" }, controller.signal)) {
          expect(chunk.length).toBeGreaterThan(0);
          controller.abort(reason);
        }
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBe(reason);
    await closed;
  });

  test("after close, synthesis is unavailable", async () => {
    const closing = engine();
    await closing.close();
    const error = await failure(closing.synthesize(request));
    expect(error.kind).toBe("unavailable");
  });
});
