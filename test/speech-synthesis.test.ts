import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SpeechService } from "../src/gen/switchboard/v1/speech_pb.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { decodeMp3, eventually, gaugeValue, pcmBytesPerSecond, postSpeech } from "./support/speech-http.js";

let t: TestServer;
let openai: OpenAI;

const passage =
  "The quick brown fox jumps over the lazy dog. Speech synthesis turns written text into sound. " +
  "This engine runs inside the server, in worker threads, so it needs no network at all.";
const passageWords = passage.split(/\s+/).length;
const model = "local/espeak-ng";

beforeAll(async () => {
  t = await startTestServer();
  openai = new OpenAI({ baseURL: `${t.httpUrl}/api/v1`, apiKey: t.tenant.api_key, maxRetries: 0 });
});
afterAll(() => t?.close());

async function speak(input: string, response_format: "mp3" | "pcm", speed?: number): Promise<{ audio: Buffer; headers: Headers }> {
  const response = await openai.audio.speech.create({ model, voice: "alloy", input, response_format, ...(speed === undefined ? {} : { speed }) });
  return { audio: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

describe("POST /audio/speech with the openai client", () => {
  it("mp3 decodes to 24 kHz audio whose length fits the text", async () => {
    const { audio, headers } = await speak(passage, "mp3");
    expect(headers.get("content-type")).toBe("audio/mpeg");
    const decoded = await decodeMp3(audio);
    expect(decoded.errors).toEqual([]);
    expect(decoded.sampleRate).toBe(24_000);
    // eSpeak speaks 175 words per minute plus sentence pauses: about 2.5 words per second.
    expect(passageWords / decoded.seconds).toBeGreaterThan(1.5);
    expect(passageWords / decoded.seconds).toBeLessThan(4.5);
  });

  it("pcm is 16-bit audio of plausible length, shorter at a higher speed", async () => {
    const [normal, fast] = await Promise.all([speak(passage, "pcm"), speak(passage, "pcm", 2)]);
    expect(normal.headers.get("content-type")).toBe("audio/pcm");
    expect(normal.audio.length % 2).toBe(0);
    const seconds = normal.audio.length / pcmBytesPerSecond;
    expect(passageWords / seconds).toBeGreaterThan(1.5);
    expect(passageWords / seconds).toBeLessThan(4.5);
    expect(fast.audio.length / normal.audio.length).toBeLessThan(0.7);
  });

  it("streams chunked with X-Generation-Id, pcm by default, whatever the Accept header", async () => {
    const reply = await postSpeech(t.httpUrl, { model, voice: "en-us", input: "Hello there." }, { key: t.tenant.api_key, headers: { accept: "application/octet-stream" } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("audio/pcm");
    expect(reply.headers.get("x-generation-id")).toMatch(/^gen-[\w-]{16}$/);
    expect(reply.headers.get("content-length")).toBeNull();
    expect(reply.headers.get("transfer-encoding")).toBe("chunked");
    expect(reply.audio.length / pcmBytesPerSecond).toBeGreaterThan(0.5);
  });

  it("gives each synthesis its own generation id", async () => {
    const [a, b] = await Promise.all([speak("One.", "pcm"), speak("Two.", "pcm")]);
    expect(a.headers.get("x-generation-id")).not.toBe(b.headers.get("x-generation-id"));
  });
});

describe("SpeechService over gRPC", () => {
  const request = { model, voice: "alloy", input: passage, responseFormat: "pcm" };

  it("CreateSpeech returns the whole audio with its content type and generation id", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const response = await client.createSpeech(request);
    expect(response.contentType).toBe("audio/pcm");
    expect(response.generationId).toMatch(/^gen-/);
    expect(passageWords / (response.audio.length / pcmBytesPerSecond)).toBeGreaterThan(1.5);
  });

  it("StreamSpeech sends start first, then the audio in several chunks", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const events = [];
    for await (const response of client.streamSpeech({ request: { ...request, responseFormat: "mp3" } })) events.push(response.event);
    expect(events[0]).toMatchObject({ case: "start", value: { contentType: "audio/mpeg", generationId: expect.stringMatching(/^gen-/) } });
    const chunks = events.slice(1).map((event) => (event.case === "audio" ? event.value : undefined));
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((chunk) => chunk instanceof Uint8Array)).toBe(true);
    const decoded = await decodeMp3(Buffer.concat(chunks as Uint8Array[]));
    expect(decoded.sampleRate).toBe(24_000);
    expect(passageWords / decoded.seconds).toBeGreaterThan(1.5);
  });
});

describe("a client that leaves mid-stream", () => {
  it("releases the engine at once, and the engine keeps serving", async () => {
    const abort = new AbortController();
    const response = await fetch(`${t.httpUrl}/api/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, voice: "en-us", input: passage.repeat(15).slice(0, 4000), response_format: "mp3" }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    expect((await reader.read()).value!.length).toBeGreaterThan(0);
    expect(await gaugeValue(t.httpUrl, "switchboard_speech_syntheses")).toBe(1);
    abort.abort();
    expect(await eventually(async () => (await gaugeValue(t.httpUrl, "switchboard_speech_syntheses")) === 0)).toBe(true);
    const { audio } = await speak("Still here.", "pcm");
    expect(audio.length / pcmBytesPerSecond).toBeGreaterThan(0.4);
  });

  it.each(["gRPC", "Connect over HTTP/1.1"])("releases the engine when a %s caller cancels StreamSpeech", async (protocol) => {
    const bearer: Interceptor = (next) => (req) => (req.header.set("authorization", `Bearer ${t.tenant.api_key}`), next(req));
    const transport: Transport = protocol === "gRPC" ? grpcTransportFor(t.grpcUrl, t.tenant.api_key) : createConnectTransport({ baseUrl: t.httpUrl, httpVersion: "1.1", interceptors: [bearer] });
    const client = createClient(SpeechService, transport);
    const abort = new AbortController();
    let messages = 0;
    // pcm of a long text: far more than the transport buffers, so the service is parked between two messages.
    const stream = client.streamSpeech({ request: { model, voice: "en-us", input: passage.repeat(15).slice(0, 4000), responseFormat: "pcm" } }, { signal: abort.signal });
    await (async () => {
      for await (const _ of stream) if (++messages === 3) abort.abort();
    })().catch(() => undefined);
    expect(messages).toBe(3);
    expect(await eventually(async () => (await gaugeValue(t.httpUrl, "switchboard_speech_syntheses")) === 0)).toBe(true);
  });
});

describe("shutdown", () => {
  it("releases a synthesis parked behind a caller that stopped reading without cancelling", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    let messages = 0;
    // Leaving the loop does not cancel the HTTP/2 stream: the service stays parked on flow control.
    for await (const _ of client.streamSpeech({ request: { model, voice: "en-us", input: passage.repeat(15).slice(0, 4000), responseFormat: "pcm" } })) {
      if (++messages === 3) break;
    }
    const held = async () => (await t.server.metrics.speechSyntheses.get()).values[0]?.value;
    expect(await held()).toBe(1);
    await t.close();
    expect(await held()).toBe(0);
  });
});
