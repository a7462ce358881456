import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { SpeechService } from "../src/gen/switchboard/v1/speech_pb.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { postSpeech } from "./support/speech-http.js";

let t: TestServer;

const valid = { model: "local/espeak-ng", voice: "alloy", input: "Hello." };
const wav = "data:audio/wav;base64,UklGRiQAAABXQVZF";

async function memberKey(email: string): Promise<string> {
  const member = await t.admin.addMember({ orgId: t.tenant.organization_id, email, role: "org:member" });
  return (await t.admin.createKey({ orgId: t.tenant.organization_id, memberId: member.id })).key;
}

beforeAll(async () => {
  t = await startTestServer({ SPEECH_REQUESTS_PER_MINUTE: "3" });
});
afterAll(() => t?.close());

describe("speech refusals", () => {
  it("401 without metadata for a missing or invalid key", async () => {
    for (const key of [null, "sb-v1-wrong"]) {
      const { status, body } = await postSpeech(t.httpUrl, valid, { key });
      expect(status).toBe(401);
      expect(body).toEqual({ error: { code: 401, message: "The Authentication header is missing or does not hold a valid API key." } });
    }
  });

  it("403 for a management key, with the message, also through the openai client", async () => {
    const { status, body } = await postSpeech(t.httpUrl, valid, { key: t.tenant.management_key });
    expect(status).toBe(403);
    expect(body.error).toMatchObject({ code: 403, message: expect.stringMatching(/management keys cannot be used/) });
    const openai = new OpenAI({ baseURL: `${t.httpUrl}/api/v1`, apiKey: t.tenant.management_key, maxRetries: 0 });
    const error = await openai.audio.speech.create({ ...valid, voice: "alloy" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(/management keys cannot be used/);
  });

  it.each([
    ["input missing", { model: valid.model, voice: "alloy" }, /input is required/],
    ["input empty", { ...valid, input: "" }, /input is required/],
    ["input only whitespace", { ...valid, input: " \n\t" }, /input is required/],
    ["input not a string", { ...valid, input: 42 }, /Invalid request body/],
    ["input too long", { ...valid, input: "a".repeat(4097) }, /input exceeds 4096 characters/],
    ["model missing", { voice: "alloy", input: "Hi." }, /model is required/],
    ["model unknown", { ...valid, model: "openai/tts-1" }, /Unknown speech model 'openai\/tts-1'. Available models: local\/espeak-ng/],
    ["voice missing", { model: valid.model, input: "Hi." }, /voice is required/],
    ["voice empty", { ...valid, voice: "" }, /voice is required/],
    ["response_format wav", { ...valid, response_format: "wav" }, /response_format must be mp3 or pcm/],
    ["speed below the embedded range", { ...valid, speed: 0.25 }, /speed must be a number from 0.5 to 2.5 for local\/espeak-ng/],
    ["speed above the embedded range", { ...valid, speed: 3 }, /speed must be a number from 0.5 to 2.5/],
    ["speed not a number", { ...valid, speed: "fast" }, /^speed must be a number\.$/],
    ["speed a number given as a string", { ...valid, speed: "1.5" }, /^speed must be a number\.$/],
    ["speed NaN", { ...valid, speed: "NaN" }, /speed must be a number/],
    ["cloning on a model without it", { ...valid, input_references: [{ type: "input_audio", input_audio: { data: wav } }] }, /local\/espeak-ng does not support voice cloning: remove input_references, or no configured model supports cloning/],
    ["input_references not an array", { ...valid, input_references: "x" }, /Invalid request body/],
    ["provider not an object", { ...valid, provider: "x" }, /Invalid request body/],
    ["provider.options not an object", { ...valid, provider: { options: [] } }, /provider.options must be an object/],
    ["provider.options.local not an object", { ...valid, provider: { options: { local: "fast" } } }, /provider.options.local must be an object/],
    ["session_id too long", { ...valid, session_id: "s".repeat(257) }, /session_id must be at most 256 characters/],
    ["user too long", { ...valid, user: "u".repeat(257) }, /user must be at most 256 characters/],
    ["user not a string", { ...valid, user: 7 }, /Invalid request body/],
    ["trace not an object", { ...valid, trace: "t" }, /Invalid request body/],
    ["body an array", [valid], /must be a JSON object/],
  ])("400 bad_request: %s", async (_name, body, message) => {
    const { status, headers, body: envelope } = await postSpeech(t.httpUrl, body, { key: t.tenant.api_key });
    expect(status).toBe(400);
    expect(envelope.error).toMatchObject({ code: 400, metadata: { reason: "bad_request", retryable: false } });
    expect(envelope.error.message).toMatch(message);
    expect(headers.get("x-should-retry")).toBe("false");
  });

  it("400 for malformed JSON", async () => {
    const { status, body } = await postSpeech(t.httpUrl, undefined, { key: t.tenant.api_key, raw: "{not json" });
    expect(status).toBe(400);
    expect(body.error.metadata.reason).toBe("bad_request");
  });

  it("x-session-id: over 256 characters is refused, and a body session_id wins over it", async () => {
    const long = "h".repeat(257);
    const refused = await postSpeech(t.httpUrl, valid, { key: t.tenant.api_key, headers: { "x-session-id": long } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/x-session-id header must be at most 256 characters/);
    // An empty session_id is none, as on the video route: the header is what is checked.
    const empty = await postSpeech(t.httpUrl, { ...valid, session_id: "" }, { key: t.tenant.api_key, headers: { "x-session-id": long } });
    expect([empty.status, empty.body.error.message]).toEqual([400, expect.stringMatching(/x-session-id header must be at most 256 characters/)]);
    const key = await memberKey("session@example.com");
    const accepted = await postSpeech(t.httpUrl, { ...valid, session_id: "s-1", user: "u-1", trace: { trace_id: "t-1" } }, { key, headers: { "x-session-id": long } });
    expect(accepted.status).toBe(200);
  });

  it("an unknown voice is refused by the engine before any audio, as a 400 naming the choices", async () => {
    const { status, body } = await postSpeech(t.httpUrl, { ...valid, voice: "nobody" }, { key: await memberKey("voice@example.com") });
    expect(status).toBe(400);
    expect(body.error.message).toMatch(/Unknown voice 'nobody'.*alloy/);
  });

  it("413 payload_too_large above the 16 MiB speech body limit, with the envelope", async () => {
    const { status, body } = await postSpeech(t.httpUrl, { ...valid, padding: "x".repeat(16 * 1024 * 1024) }, { key: t.tenant.api_key });
    expect(status).toBe(413);
    expect(body.error).toMatchObject({ code: 413, message: "Request body exceeds 16 MiB (16777216 bytes).", metadata: { reason: "payload_too_large" } });
  });

  it("a body over 1 MiB is read on this route (room for cloning references)", async () => {
    const { status, body } = await postSpeech(t.httpUrl, { ...valid, voice: "", padding: "x".repeat(2 * 1024 * 1024) }, { key: t.tenant.api_key });
    expect(status).toBe(400);
    expect(body.error.message).toMatch(/voice is required/);
  });

  it("429 rate_limited with Retry-After past SPEECH_REQUESTS_PER_MINUTE for one member", async () => {
    const key = await memberKey("limited@example.com");
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await postSpeech(t.httpUrl, valid, { key });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.body.error.metadata).toEqual({ reason: "rate_limited", retryable: true });
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("gives gRPC callers the same refusals as a status with the error detail", async () => {
    const client = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const error = await client.createSpeech({ ...valid, responseFormat: "wav" }).catch((caught: unknown) => ConnectError.from(caught));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toBe("response_format must be mp3 or pcm.");
    expect((error as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 400, reason: "bad_request" });

    const management = createClient(SpeechService, grpcTransportFor(t.grpcUrl, t.tenant.management_key));
    const forbidden = await (async () => {
      for await (const _ of management.streamSpeech({ request: valid }));
    })().catch((caught: unknown) => ConnectError.from(caught));
    expect((forbidden as ConnectError).code).toBe(Code.PermissionDenied);
    expect((forbidden as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 403 });

    const empty = await (async () => {
      for await (const _ of client.streamSpeech({}));
    })().catch((caught: unknown) => ConnectError.from(caught));
    expect((empty as ConnectError).rawMessage).toBe("request is required.");
  });
});
