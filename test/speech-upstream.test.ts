import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { ConnectError, createClient } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { SpeechService } from "../src/gen/switchboard/v1/speech_pb.js";
import { fakeApiKey, fakeChunkBytes, fakeChunkCount, startFakeOpenAiSpeechServer, type FakeOpenAiSpeechServer } from "./speech/fake-openai-speech-server.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { eventually, gaugeValue, postSpeech } from "./support/speech-http.js";

let t: TestServer;
let upstream: FakeOpenAiSpeechServer;
let modelsDir: string;

/** 1 USD per 1000 characters: 100 characters cost 0.1 USD. */
const priced = { model: "fake/tts", voice: "alloy", input: "x".repeat(100) };
const cost = 0.1;
const startingCredits = 10;
const wav = `data:audio/wav;base64,${Buffer.from("RIFF....WAVEfmt ").toString("base64")}`;

const credits = async () => (await t.server.store.organizations.credits(t.tenant.organization_id))!;

beforeAll(async () => {
  upstream = await startFakeOpenAiSpeechServer();
  modelsDir = mkdtempSync(join(tmpdir(), "speech-upstream-"));
  const modelsFile = join(modelsDir, "models.json");
  const entry = { provider: "openai-compatible", base_url: upstream.baseUrl, api_key_env: "FAKE_SPEECH_API_KEY", upstream_model: "tts-1", timeout_ms: 1_000 };
  writeFileSync(
    modelsFile,
    JSON.stringify({
      speech: [
        { ...entry, id: "fake/tts", price_per_1k_chars: 1 },
        // Cloning bodies are megabytes: a loaded machine must not turn them into timeouts.
        { ...entry, id: "fake/clone", upstream_model: "clone-1", price_per_1k_chars: 0, supports_cloning: true, timeout_ms: 30_000 },
      ],
    }),
  );
  process.env.FAKE_SPEECH_API_KEY = fakeApiKey;
  t = await startTestServer({ MODELS_FILE: modelsFile });
});
afterAll(async () => {
  await t?.close();
  await upstream?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});
beforeEach(async () => {
  await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: startingCredits });
});

describe("an upstream speech model", () => {
  it("streams the upstream's audio through the openai client and charges the organization", async () => {
    const openai = new OpenAI({ baseURL: `${t.httpUrl}/api/v1`, apiKey: t.tenant.api_key, maxRetries: 0 });
    const response = await openai.audio.speech.create({ ...priced, response_format: "pcm" });
    expect(response.headers.get("x-generation-id")).toMatch(/^gen-/);
    const audio = Buffer.from(await response.arrayBuffer());
    expect(audio.length).toBe(fakeChunkBytes * fakeChunkCount);
    expect(audio[0]).toBe(1);
    expect(audio[audio.length - 1]).toBe(fakeChunkCount);
    expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
  });

  it("forwards provider.options for its slug, and never session_id, user or trace", async () => {
    const reply = await postSpeech(
      t.httpUrl,
      { ...priced, provider: { options: { fake: { instructions: "cheerful" }, other: { ignored: true } } }, session_id: "s-1", user: "u-1", trace: { trace_id: "t-1" } },
      { key: t.tenant.api_key, headers: { "x-session-id": "h-1" } },
    );
    expect(reply.status).toBe(200);
    const forwarded = upstream.requests.at(-1)!.body;
    expect(forwarded).toEqual({ instructions: "cheerful", model: "tts-1", input: priced.input, voice: "alloy", response_format: "pcm" });
  });

  it("402 insufficient_credits when the balance cannot cover the cost; nothing is charged or sent", async () => {
    await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: 0.05 });
    const sent = upstream.requests.length;
    const { status, body } = await postSpeech(t.httpUrl, priced, { key: t.tenant.api_key });
    expect(status).toBe(402);
    expect(body.error).toMatchObject({ code: 402, metadata: { reason: "insufficient_credits" } });
    expect(body.error.message).toContain("0.1 USD");
    expect(await credits()).toBeCloseTo(0.05, 6);
    expect(upstream.requests.length).toBe(sent);
  });

  it.each([
    ["status-500", 502, "provider_error"],
    ["status-401", 502, "provider_error"],
    ["status-503", 503, "service_unavailable"],
    ["status-504", 524, "timeout"],
    ["hang", 524, "timeout"],
    ["status-429", 529, "provider_overloaded"],
    ["status-529", 529, "provider_overloaded"],
    ["status-400", 400, "bad_request"],
  ])("upstream %s before any audio → %i %s, and the charge is refunded", async (voice, status, reason) => {
    const reply = await postSpeech(t.httpUrl, { ...priced, voice }, { key: t.tenant.api_key });
    expect(reply.status).toBe(status);
    expect(reply.body.error).toMatchObject({ code: status, metadata: { reason } });
    expect(reply.headers.get("x-generation-id")).toBeNull();
    expect(await credits()).toBeCloseTo(startingCredits, 6);
  });

  it("the upstream's own message explains its 400", async () => {
    const reply = await postSpeech(t.httpUrl, { ...priced, voice: "status-400" }, { key: t.tenant.api_key });
    expect(reply.body.error.message).toBe("fake/tts rejected the request: Upstream says 400 for voice status-400");
  });

  it("gRPC callers get the same statuses in the error detail", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const error = await client.createSpeech({ ...priced, voice: "status-529" }).catch((caught: unknown) => ConnectError.from(caught));
    expect((error as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 529, reason: "provider_overloaded", retryable: true });
    expect(await credits()).toBeCloseTo(startingCredits, 6);
  });

  it("StreamSpeech relays the upstream's audio byte for byte after start", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const events = [];
    for await (const response of client.streamSpeech({ request: priced })) events.push(response.event);
    expect(events[0].case).toBe("start");
    // How the chunks coalesce depends on timing; that the first leaves before the upstream ends is shown by the stall tests.
    const audio = Buffer.concat(events.slice(1).map((event) => event.value as Uint8Array));
    const expected = Buffer.concat(Array.from({ length: fakeChunkCount }, (_, i) => Buffer.alloc(fakeChunkBytes, i + 1)));
    expect(audio.equals(expected)).toBe(true);
  });

  it("an upstream that stalls after the first audio cuts the response (truncated body) and is charged", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...priced, voice: "stall" }),
    });
    expect(response.status).toBe(200);
    await expect(response.arrayBuffer()).rejects.toThrow();
    expect(await credits()).toBeCloseTo(startingCredits - cost, 6);
  });

  it("a client that leaves mid-stream closes the upstream connection", async () => {
    const abort = new AbortController();
    const response = await fetch(`${t.httpUrl}/api/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...priced, voice: "stall" }),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    expect((await reader.read()).value!.length).toBe(fakeChunkBytes);
    const upstreamClosed = upstream.nextClientClose();
    abort.abort();
    await upstreamClosed;
    expect(await eventually(async () => (await gaugeValue(t.httpUrl, "switchboard_speech_syntheses")) === 0)).toBe(true);
  });
});

describe("voice cloning on a model that supports it", () => {
  const clone = { model: "fake/clone", voice: "alloy", input: "Hello." };

  it("forwards one audio part and one transcript as plain JSON", async () => {
    const reply = await postSpeech(
      t.httpUrl,
      { ...clone, input_references: [{ type: "input_audio", input_audio: { data: wav, format: "wav" } }, { type: "text", text: "riff wave" }] },
      { key: t.tenant.api_key },
    );
    expect(reply.status).toBe(200);
    expect(upstream.requests.at(-1)!.body.input_references).toEqual([
      { type: "input_audio", input_audio: { data: wav, format: "wav" } },
      { type: "text", text: "riff wave" },
    ]);
  });

  it("accepts a reference larger than the surface's 1 MiB body limit", async () => {
    const data = `data:audio/wav;base64,${Buffer.alloc(3 * 1024 * 1024, 7).toString("base64")}`;
    const reply = await postSpeech(t.httpUrl, { ...clone, input_references: [{ type: "input_audio", input_audio: { data } }] }, { key: t.tenant.api_key });
    expect(reply.status).toBe(200);
    expect((upstream.requests.at(-1)!.body.input_references as { input_audio: { data: string } }[])[0].input_audio.data).toBe(data);
  });

  it.each([
    ["no audio part", [{ type: "text", text: "hi" }], /exactly one input_audio part/],
    ["two audio parts", [{ type: "input_audio", input_audio: { data: wav } }, { type: "input_audio", input_audio: { data: wav } }], /exactly one input_audio part/],
    ["two text parts", [{ type: "input_audio", input_audio: { data: wav } }, { type: "text", text: "a" }, { type: "text", text: "b" }], /at most one text part/],
    ["an unknown part", [{ type: "image_url", image_url: { url: "x" } }], /input_references\[0\].type must be input_audio or text/],
    ["audio without data", [{ type: "input_audio", input_audio: {} }], /input_references\[0\].input_audio.data is required/],
    ["a URL instead of a data URI", [{ type: "input_audio", input_audio: { data: "https://example.com/a.wav" } }], /must be a base64 data URI/],
    ["a non-audio data URI", [{ type: "input_audio", input_audio: { data: "data:image/png;base64,iVBORw0KGgo=" } }], /must be a base64 data URI/],
    ["data that is not base64", [{ type: "input_audio", input_audio: { data: "data:audio/wav;base64,not base64!" } }], /does not hold valid base64 audio/],
    ["a bad format", [{ type: "input_audio", input_audio: { data: wav, format: "w a v" } }], /input_audio.format must be/],
    ["an empty transcript", [{ type: "input_audio", input_audio: { data: wav } }, { type: "text", text: "" }], /input_references\[1\].text is required/],
  ])("400 for %s", async (_name, input_references, message) => {
    const reply = await postSpeech(t.httpUrl, { ...clone, input_references }, { key: t.tenant.api_key });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(message);
  });

  it("400 for more than 10 MiB of decoded reference audio", async () => {
    const data = `data:audio/wav;base64,${Buffer.alloc(10 * 1024 * 1024 + 3).toString("base64")}`;
    const reply = await postSpeech(t.httpUrl, { ...clone, input_references: [{ type: "input_audio", input_audio: { data } }] }, { key: t.tenant.api_key });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(/exceeds 10 MiB of decoded audio/);
  });

  it("names the cloning models when the chosen one cannot clone", async () => {
    const reply = await postSpeech(t.httpUrl, { ...priced, input_references: [{ type: "input_audio", input_audio: { data: wav } }] }, { key: t.tenant.api_key });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toBe("fake/tts does not support voice cloning: remove input_references, or choose a model that does (fake/clone).");
    expect(await credits()).toBeCloseTo(startingCredits, 6);
  });
});
