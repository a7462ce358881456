import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Validator } from "@seriousme/openapi-schema-validator";
import { errorCatalogue } from "../src/core/error-catalogue.js";
import { chatLimits } from "../src/core/chat/chat-request.js";
import { memberPaging } from "../src/core/organization-service.js";
import { speechLimits } from "../src/core/speech/speech-limits.js";
import { videoLimits } from "../src/core/video/video-limits.js";
import { openApiDocumentUrl } from "../src/bridge/openapi-route.js";
import { answerBody, promptBody, startChatHarness, type ChatHarness } from "./support/chat-harness.js";
import { ContractViolation, createOpenApiContract, openApiDocument } from "./support/openapi-contract.js";
import { waitForVideo } from "./support/video-client.js";
import { fakeApiKey, startFakeOpenAiSpeechServer, type FakeOpenAiSpeechServer } from "./speech/fake-openai-speech-server.js";

const contract = createOpenApiContract();
const schemas = openApiDocument.components.schemas;
/** Each rate limit of the server under test; the "broke" member spends them. */
const perMinute = 12;

let h: ChatHarness;
let upstream: FakeOpenAiSpeechServer;
let modelsDir: string;
/** A standard key of a member of another organization: no credits, in the programme, with an unreachable intern. */
let brokeKey: string;
let departedKey: string;

const url = (path: string) => `${h.t.httpUrl}/api/v1${path}`;
const bearer = (key: string | null | undefined): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});
const get = (path: string, key: string | null = h.t.tenant.api_key) => fetch(url(path), { headers: bearer(key) });
const post = (path: string, body: unknown, key: string | null = h.t.tenant.api_key) =>
  fetch(url(path), { method: "POST", headers: { "content-type": "application/json", ...bearer(key) }, body: typeof body === "string" ? body : JSON.stringify(body) });

/** Checks a response against the document and returns what it held. */
const checked = (method: string, template: string, response: Response | Promise<Response>) => Promise.resolve(response).then((r) => contract.check(method, template, r));

beforeAll(async () => {
  upstream = await startFakeOpenAiSpeechServer();
  modelsDir = mkdtempSync(join(tmpdir(), "openapi-models-"));
  const modelsFile = join(modelsDir, "models.json");
  const entry = { provider: "openai-compatible", base_url: upstream.baseUrl, api_key_env: "FAKE_SPEECH_API_KEY", upstream_model: "tts-1", timeout_ms: 1_000 };
  writeFileSync(modelsFile, JSON.stringify({ speech: [{ ...entry, id: "fake/tts", price_per_1k_chars: 1 }] }));
  process.env.FAKE_SPEECH_API_KEY = fakeApiKey;
  const limit = String(perMinute);
  h = await startChatHarness({ env: { MODELS_FILE: modelsFile, CHAT_TURNS_PER_MINUTE: limit, SPEECH_REQUESTS_PER_MINUTE: limit, VIDEO_SUBMITS_PER_MINUTE: limit } });
  const { admin, tenant } = h.t;

  const broke = await admin.createOrganization({ name: "Broke" });
  await admin.setCredits({ orgId: broke.id, usd: 0 });
  await admin.setProgrammeMembership({ orgId: broke.id, member: true });
  await admin.addIntern({ orgId: broke.id, id: "unreachable", endpoint: "http://127.0.0.1:9", token: "secret", state: "running" });
  const brokeMember = await admin.addMember({ orgId: broke.id, email: "broke@example.com", role: "org:admin" });
  brokeKey = (await admin.createKey({ orgId: broke.id, memberId: brokeMember.id })).key;

  await admin.addIntern({ orgId: tenant.organization_id, id: "asleep", endpoint: "http://127.0.0.1:9", token: "secret", state: "suspended" });
  const leaver = await admin.addMember({ orgId: tenant.organization_id, email: "leaver@example.com", role: "org:member" });
  departedKey = (await admin.createKey({ orgId: tenant.organization_id, memberId: leaver.id })).key;
  await admin.removeMember({ orgId: tenant.organization_id, memberId: leaver.id });
});
afterAll(async () => {
  await h?.close();
  await upstream?.close();
  if (modelsDir) rmSync(modelsDir, { recursive: true, force: true });
});

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document, version 1.0.0, under /api/v1 with bearer auth", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(openApiDocument));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(openApiDocument.info.version).toBe("1.0.0");
    expect(openApiDocument.servers).toEqual([{ url: "/api/v1" }]);
    expect(openApiDocument.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("is served at /api/v1/openapi.json without a key, as committed, cacheable", async () => {
    const served = await checked("get", "/openapi.json", get("/openapi.json", null));
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toMatch(/^application\/json/);
    expect(served.headers.get("cache-control")).toMatch(/max-age=\d+/);
    expect(served.body).toEqual(JSON.parse(readFileSync(openApiDocumentUrl, "utf8")));
  });

  it("lists every public reason of the error catalogue, and no other", () => {
    const reasons = new Set(Object.values(errorCatalogue).map((entry) => entry.reason).filter(Boolean));
    expect(new Set(schemas.ErrorReason.enum)).toEqual(reasons);
  });

  it("states the core's limits", () => {
    const chat = schemas.ChatCompletionRequest.properties;
    expect(chat.model.maxLength).toBe(chatLimits.idChars);
    expect(chat.session_id.maxLength).toBe(chatLimits.idChars);
    expect(schemas.ChatMessage.oneOf[2].properties.tool_call_id.maxLength).toBe(chatLimits.toolCallIdChars);
    expect(schemas.EchoedToolCall.properties.id.maxLength).toBe(chatLimits.toolCallIdChars);
    expect(schemas.ChatMessage.description).toContain(`at most ${chatLimits.promptChars} characters`);
    const speech = schemas.SpeechRequest.properties;
    expect(speech.input.maxLength).toBe(speechLimits.inputChars);
    expect(speech.model.maxLength).toBe(speechLimits.idChars);
    expect([speech.session_id.maxLength, speech.user.maxLength]).toEqual([speechLimits.idChars, speechLimits.idChars]);
    expect([speech.speed.minimum, speech.speed.maximum]).toEqual([speechLimits.upstreamSpeed.min, speechLimits.upstreamSpeed.max]);
    const video = schemas.VideoGenerationRequest.properties;
    expect([video.session_id.maxLength, video.user.maxLength]).toEqual([videoLimits.idChars, videoLimits.idChars]);
    const limit = openApiDocument.paths["/organization/members"].get.parameters.find((p: any) => p.name === "limit").schema;
    expect([limit.minimum, limit.maximum, limit.default]).toEqual([1, memberPaging.maxLimit, memberPaging.defaultLimit]);
  });
});

describe("the contract check fails on a response the document does not describe", () => {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "x-request-id": "r1", ...headers } });
  const members = { data: [{ id: "m", email: "a@b.c", first_name: null, last_name: null, role: "org:admin" }], total_count: 1 };

  it("accepts a response that matches", async () => {
    await expect(contract.check("get", "/organization/members", json(200, members))).resolves.toMatchObject({ status: 200 });
  });

  it.each([
    ["an undocumented status", "get", "/organization/members", () => json(418, { error: { code: 418, message: "teapot" } }), /status 418 is not documented/],
    ["an undocumented operation", "delete", "/organization/members", () => json(200, members), /not a documented operation/],
    ["a body missing a required member", "get", "/organization/members", () => json(200, { data: [] }), /total_count/],
    ["a body with an undocumented member", "get", "/organization/members", () => json(200, { ...members, next: 2 }), /additional properties/],
    ["an undocumented content type", "get", "/organization/members", () => new Response("hi", { status: 200, headers: { "content-type": "text/plain", "x-request-id": "r" } }), /content type text\/plain/],
    ["a required header missing", "get", "/organization/members", () => new Response(JSON.stringify(members), { status: 200, headers: { "content-type": "application/json" } }), /x-request-id is missing/],
    ["an envelope reason not in the catalogue", "get", "/videos/{id}", () => json(404, { error: { code: 404, message: "x", metadata: { reason: "gone", retryable: false } } }), /allowed values/],
    ["a 429 without Retry-After", "post", "/videos", () => json(429, { error: { code: 429, message: "x", metadata: { reason: "rate_limited", retryable: true } } }), /Retry-After is missing/],
    ["a speech 200 without X-Generation-Id", "post", "/audio/speech", () => new Response("RIFF", { status: 200, headers: { "content-type": "audio/pcm", "x-request-id": "r" } }), /X-Generation-Id is missing/],
    [
      "a chat chunk that does not match",
      "post",
      "/interns/{internId}/chat/completions",
      () => new Response('data: {"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}\n\ndata: [DONE]\n\n', { status: 200, headers: { "content-type": "text/event-stream", "x-request-id": "r" } }),
      /data payload 0 does not match/,
    ],
    [
      "a chat stream without [DONE]",
      "post",
      "/interns/{internId}/chat/completions",
      () => new Response('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\n', { status: 200, headers: { "content-type": "text/event-stream", "x-request-id": "r" } }),
      /did not end with data: \[DONE\]/,
    ],
  ])("%s", async (_name, method, template, response, message) => {
    await expect(contract.check(method, template, response())).rejects.toThrow(ContractViolation);
    await expect(contract.check(method, template, response())).rejects.toThrow(message);
  });
});

describe("request body schemas", () => {
  const prompt = promptBody("x");
  const video = { model: "local/test-pattern", prompt: "p" };
  const speech = { model: "local/espeak-ng", voice: "en-us", input: "Hi." };
  const frame = (frameType: string, type = "image_url") => ({ type, image_url: { url: "https://img.example/x.png" }, frame_type: frameType });
  const call = { id: "i1", type: "function", function: { name: "service.provide_input", arguments: "{}" } };

  it.each([
    ["chat: messages missing", "ChatCompletionRequest", { stream: true }],
    ["chat: messages empty", "ChatCompletionRequest", { messages: [], stream: true }],
    ["chat: stream absent", "ChatCompletionRequest", { messages: [{ role: "user", content: "x" }] }],
    ["chat: stream false", "ChatCompletionRequest", { ...prompt, stream: false }],
    ["chat: stream a string", "ChatCompletionRequest", { ...prompt, stream: "true" }],
    ["chat: unknown role", "ChatCompletionRequest", { messages: [{ role: "robot", content: "x" }], stream: true }],
    ["chat: user content null", "ChatCompletionRequest", { messages: [{ role: "user", content: null }], stream: true }],
    ["chat: content a number", "ChatCompletionRequest", { messages: [{ role: "user", content: 5 }], stream: true }],
    ["chat: an image part", "ChatCompletionRequest", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }], stream: true }],
    ["chat: approval_mode outside the enum", "ChatCompletionRequest", { ...prompt, approval_mode: "auto" }],
    ["chat: model empty", "ChatCompletionRequest", { ...prompt, model: "" }],
    ["chat: model too long", "ChatCompletionRequest", { ...prompt, model: "m".repeat(chatLimits.idChars + 1) }],
    ["chat: session_id too long", "ChatCompletionRequest", { ...prompt, session_id: "s".repeat(chatLimits.idChars + 1) }],
    ["chat: tool without tool_call_id", "ChatCompletionRequest", { messages: [{ role: "tool", content: "allow_once" }], stream: true, session_id: "s" }],
    ["chat: tool_call_id too long", "ChatCompletionRequest", { messages: [{ role: "tool", content: "a", tool_call_id: "i".repeat(chatLimits.toolCallIdChars + 1) }], stream: true, session_id: "s" }],
    ["chat: echoed call without function", "ChatCompletionRequest", answerBody("s", { id: "i1", type: "function" }, "allow_once")],
    ["chat: echoed arguments not a string", "ChatCompletionRequest", answerBody("s", { ...call, function: { name: "n", arguments: {} } }, "allow_once")],
    ["video: no model", "VideoGenerationRequest", { prompt: "p" }],
    ["video: aspect_ratio outside the enum", "VideoGenerationRequest", { ...video, aspect_ratio: "5:4" }],
    ["video: resolution outside the enum", "VideoGenerationRequest", { ...video, resolution: "360p" }],
    ["video: duration 0", "VideoGenerationRequest", { ...video, duration: 0 }],
    ["video: a fractional duration", "VideoGenerationRequest", { ...video, duration: 1.5 }],
    ["video: a malformed size", "VideoGenerationRequest", { ...video, size: "big" }],
    ["video: upscale_factor 0", "VideoGenerationRequest", { ...video, upscale_factor: 0 }],
    ["video: a negative creativity", "VideoGenerationRequest", { ...video, creativity: -1 }],
    ["video: frame_images not an array", "VideoGenerationRequest", { ...video, frame_images: "first" }],
    ["video: a frame without frame_type", "VideoGenerationRequest", { ...video, frame_images: [{ type: "image_url", image_url: { url: "https://img.example/x.png" } }] }],
    ["video: a middle frame", "VideoGenerationRequest", { ...video, frame_images: [frame("middle_frame")] }],
    ["video: a frame of another type", "VideoGenerationRequest", { ...video, frame_images: [frame("first_frame", "video_url")] }],
    ["video: a reference of an unknown type", "VideoGenerationRequest", { ...video, input_references: [{ type: "text", text: "x" }] }],
    ["video: generate_audio not a boolean", "VideoGenerationRequest", { ...video, generate_audio: "yes" }],
    ["video: session_id too long", "VideoGenerationRequest", { ...video, session_id: "s".repeat(videoLimits.idChars + 1) }],
    ["video: user too long", "VideoGenerationRequest", { ...video, user: "u".repeat(videoLimits.idChars + 1) }],
    ["speech: input empty", "SpeechRequest", { ...speech, input: "" }],
    ["speech: input blank", "SpeechRequest", { ...speech, input: "   " }],
    ["speech: input too long", "SpeechRequest", { ...speech, input: "x".repeat(speechLimits.inputChars + 1) }],
    ["speech: no model", "SpeechRequest", { voice: "en-us", input: "Hi." }],
    ["speech: voice empty", "SpeechRequest", { ...speech, voice: "" }],
    ["speech: response_format outside the enum", "SpeechRequest", { ...speech, response_format: "wav" }],
    ["speech: speed above every model's range", "SpeechRequest", { ...speech, speed: 5 }],
    ["speech: a reference of an unknown type", "SpeechRequest", { ...speech, input_references: [{ type: "image_url" }] }],
    ["speech: session_id too long", "SpeechRequest", { ...speech, session_id: "s".repeat(speechLimits.idChars + 1) }],
    ["speech: user too long", "SpeechRequest", { ...speech, user: "u".repeat(speechLimits.idChars + 1) }],
  ])("%s: refused by the schema and by the server (400)", async (_name, schema, body) => {
    expect(contract.matches(schema, body)).toBe(false);
    const path = { ChatCompletionRequest: "/interns/{internId}/chat/completions", VideoGenerationRequest: "/videos", SpeechRequest: "/audio/speech" }[schema]!;
    const refused = await checked("post", path, post(path.replace("{internId}", h.internId), body));
    expect(refused.status).toBe(400);
  });

  it.each([
    ["chat: a prompt", "ChatCompletionRequest", promptBody("x", { approval_mode: "manual", model: "m", session_id: "s" })],
    ["chat: a prompt of text parts after history", "ChatCompletionRequest", { messages: [{ role: "system", content: "s" }, { role: "assistant", content: null }, { role: "user", content: [{ type: "text", text: "x" }] }], stream: true }],
    ["chat: an answer", "ChatCompletionRequest", answerBody("s", { ...call, index: 0 }, "allow_once")],
    ["video: every member", "VideoGenerationRequest", { ...video, aspect_ratio: "16:9", resolution: "720p", size: "1280x720", duration: 2, seed: -3, generate_audio: false, callback_url: "https://hooks.example/v", frame_images: [frame("first_frame"), frame("last_frame")], input_references: [{ type: "audio_url", audio_url: { url: "https://a.example/x.mp3" } }], provider: { options: { openai: { quality: "high" } } }, session_id: "s", user: "u", trace: { trace_id: "t", custom: 1 } }],
    ["speech: every member", "SpeechRequest", { ...speech, response_format: "mp3", speed: 1.5, input_references: [{ type: "input_audio", input_audio: { data: "data:audio/wav;base64,UklGRg==", format: "wav" } }, { type: "text", text: "hi" }], provider: { options: { openai: {} } }, session_id: "s", user: "u", trace: { span_name: "x" } }],
  ])("%s: accepted by the schema", (_name, schema, body) => {
    expect(contract.matches(schema, body)).toBe(true);
  });
});

describe("GET /organization/members", () => {
  it("200 with a page", async () => {
    const page = await checked("get", "/organization/members", get("/organization/members?offset=0&limit=1", h.t.tenant.management_key));
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
  });

  it.each([
    ["400 for a limit out of range", "?limit=0", "management", 400],
    ["400 for an offset that is not an integer", "?offset=x", "management", 400],
    ["401 without a key", "", null, 401],
    ["401 management_key_required for a standard key", "", "standard", 401],
  ])("%s", async (_name, query, kind, status) => {
    const key = kind === "management" ? h.t.tenant.management_key : kind === "standard" ? h.t.tenant.api_key : null;
    const refused = await checked("get", "/organization/members", get(`/organization/members${query}`, key));
    expect(refused.status).toBe(status);
  });
});

describe("video routes", () => {
  it("submit, poll to completed, and download each output", async () => {
    const body = { model: "local/test-pattern", prompt: "openapi", duration: 1, resolution: "480p" };
    expect(contract.matches("VideoGenerationRequest", body)).toBe(true);
    const submitted = await checked("post", "/videos", post("/videos", body));
    expect(submitted.status).toBe(200);
    expect(submitted.body.status).toBe("pending");
    const { job } = await waitForVideo(h.t.httpUrl, h.t.tenant.api_key, submitted.body.polling_url);
    expect(job.status).toBe("completed");
    const polled = await checked("get", "/videos/{id}", get(`/videos/${job.id}`));
    expect(polled.body).toMatchObject({ status: "completed", usage: { is_byok: false } });
    const content = await checked("get", "/videos/{id}/content", get(`/videos/${job.id}/content?index=0`));
    expect(content.status).toBe(200);
    expect(content.bytes!.subarray(4, 8).toString("latin1")).toBe("ftyp");
    const missingOutput = await checked("get", "/videos/{id}/content", get(`/videos/${job.id}/content?index=7`));
    expect(missingOutput.status).toBe(404);
  });

  it.each([
    ["POST 400 for an unknown model", "post", "/videos", "/videos", { model: "nope/none", prompt: "x" }, "api", 400],
    ["POST 400 for malformed JSON", "post", "/videos", "/videos", "{", "api", 400],
    ["POST 401 without a key", "post", "/videos", "/videos", { model: "local/test-pattern", prompt: "x" }, null, 401],
    ["POST 403 for a management key", "post", "/videos", "/videos", { model: "local/test-pattern", prompt: "x" }, "management", 403],
    ["POST 413 above 16 MiB", "post", "/videos", "/videos", { model: "local/test-pattern", prompt: "x".repeat(videoLimits.bodyBytes) }, "api", 413],
    ["GET 404 for an unknown job", "get", "/videos/{id}", "/videos/vid_unknown", undefined, "api", 404],
    ["GET 401 without a key", "get", "/videos/{id}", "/videos/vid_unknown", undefined, null, 401],
    ["GET 403 for a management key", "get", "/videos/{id}", "/videos/vid_unknown", undefined, "management", 403],
    ["content 400 for a bad index", "get", "/videos/{id}/content", "/videos/vid_unknown/content?index=x", undefined, "api", 400],
    ["content 404 for an unknown job", "get", "/videos/{id}/content", "/videos/vid_unknown/content", undefined, "api", 404],
    ["content 401 without a key", "get", "/videos/{id}/content", "/videos/vid_unknown/content", undefined, null, 401],
    ["content 403 for a management key", "get", "/videos/{id}/content", "/videos/vid_unknown/content", undefined, "management", 403],
  ])("%s", async (_name, method, template, path, body, kind, status) => {
    const key = kind === "api" ? h.t.tenant.api_key : kind === "management" ? h.t.tenant.management_key : null;
    const refused = await checked(method, template, method === "post" ? post(path, body, key) : get(path, key));
    expect(refused.status).toBe(status);
  });

  it("402 while the organization has no credits, then 429 past the member's submissions per minute", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= perMinute; i++) {
      statuses.push((await checked("post", "/videos", post("/videos", { model: "local/test-pattern", prompt: "x", duration: 1 }, brokeKey))).status);
    }
    expect(statuses).toEqual([...Array(perMinute).fill(402), 429]);
  });
});

describe("POST /audio/speech", () => {
  it.each([["mp3", "audio/mpeg"], ["pcm", "audio/pcm"]])("200 %s as %s, with X-Generation-Id", async (format, contentType) => {
    const body = { model: "local/espeak-ng", voice: "en-us", input: "Hello.", response_format: format };
    expect(contract.matches("SpeechRequest", body)).toBe(true);
    const speech = await checked("post", "/audio/speech", post("/audio/speech", body));
    expect(speech.status).toBe(200);
    expect(speech.headers.get("content-type")).toBe(contentType);
    expect(speech.bytes!.length).toBeGreaterThan(0);
  });

  it.each([
    ["400 for an empty voice", { model: "local/espeak-ng", voice: "", input: "Hi." }, "api", 400],
    ["401 without a key", { model: "local/espeak-ng", voice: "en-us", input: "Hi." }, null, 401],
    ["403 for a management key", { model: "local/espeak-ng", voice: "en-us", input: "Hi." }, "management", 403],
    ["413 above 16 MiB", { model: "local/espeak-ng", voice: "en-us", input: "Hi.", padding: "x".repeat(speechLimits.bodyBytes) }, "api", 413],
    ["502 provider_error", { model: "fake/tts", voice: "status-500", input: "Hi." }, "api", 502],
    ["503 service_unavailable", { model: "fake/tts", voice: "status-503", input: "Hi." }, "api", 503],
    ["524 timeout", { model: "fake/tts", voice: "status-504", input: "Hi." }, "api", 524],
    ["529 provider_overloaded", { model: "fake/tts", voice: "status-529", input: "Hi." }, "api", 529],
  ])("%s", async (_name, body, kind, status) => {
    const key = kind === "api" ? h.t.tenant.api_key : kind === "management" ? h.t.tenant.management_key : null;
    const refused = await checked("post", "/audio/speech", post("/audio/speech", body, key));
    expect(refused.status).toBe(status);
  });

  it("402 while the organization has no credits, then 429 past the member's requests per minute", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= perMinute; i++) {
      statuses.push((await checked("post", "/audio/speech", post("/audio/speech", { model: "fake/tts", voice: "alloy", input: "Hi." }, brokeKey))).status);
    }
    expect(statuses).toEqual([...Array(perMinute).fill(402), 429]);
  });
});

describe("POST /interns/{internId}/chat/completions", () => {
  const chatPath = (intern: string) => `/interns/${intern}/chat/completions`;
  const template = "/interns/{internId}/chat/completions";
  const chat = (body: unknown, key: string | null = h.t.tenant.api_key, intern = h.internId) => checked("post", template, post(chatPath(intern), body, key));

  it("a streamed turn: role, reasoning, content, stop, final chunk with usage", async () => {
    const turn = await chat(promptBody("think planning\nsay Hello\nusage 10 2\ncost 0.25"));
    expect(turn.status).toBe(200);
    expect(turn.chunks!.map((chunk) => chunk.choices[0]?.finish_reason)).toContain("stop");
    expect(turn.chunks!.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10 } });
  });

  it("a pause on a question (tool_calls), its answer, and the answer refused once it is not pending", async () => {
    const asked = await chat(promptBody("permission Deploy allow_once,reject_once", { approval_mode: "manual" }));
    const call = asked.chunks!.find((chunk) => chunk.choices[0]?.delta.tool_calls)!.choices[0].delta.tool_calls[0];
    expect(asked.chunks!.at(-2).choices[0].finish_reason).toBe("tool_calls");
    const sessionId = asked.chunks!.at(-1).session_id;
    expect(asked.chunks!.at(-1).usage).toBeNull();
    const unknown = await chat(answerBody(sessionId, { ...call, id: "call_unknown" }, "allow_once"));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.metadata.reason).toBe("interaction_unknown");
    const answered = await chat(answerBody(sessionId, call, "allow_once"));
    expect(answered.status).toBe(200);
    const again = await chat(answerBody(sessionId, call, "allow_once"));
    expect(again.status).toBe(409);
    expect(again.body.error.metadata.reason).toBe("interaction_not_pending");
  });

  it("an in-stream 410 run_ended when the answer cancels the run", async () => {
    const asked = await chat(promptBody("permission Deploy", { approval_mode: "manual" }));
    const call = asked.chunks!.find((chunk) => chunk.choices[0]?.delta.tool_calls)!.choices[0].delta.tool_calls[0];
    const cancelled = await chat(answerBody(asked.chunks!.at(-1).session_id, call, "cancel"));
    expect(cancelled.status).toBe(200);
    expect(cancelled.chunks!.at(-2)).toMatchObject({ choices: [{ finish_reason: "error" }], error: { code: 410, metadata: { reason: "run_ended" } } });
  });

  it("409 busy with Retry-After while another turn runs in the session", async () => {
    const first = await chat(promptBody("say x"));
    const sessionId = first.chunks!.at(-1).session_id;
    const gate = join(modelsDir, "busy-gate");
    const running = await h.open(promptBody(`say started\nwait ${gate}\nsay released`, { session_id: sessionId }));
    // The stream's first bytes mean the turn holds the session.
    const reader = running.body!.getReader();
    await reader.read();
    const busy = await chat(promptBody("say again", { session_id: sessionId }));
    writeFileSync(gate, "");
    while (!(await reader.read()).done);
    expect(busy.status).toBe(409);
    expect(busy.body.error.metadata.reason).toBe("busy");
    expect(busy.headers.get("retry-after")).toMatch(/^\d+$/);
  });

  it("an in-stream error chunk", async () => {
    const failed = await chat(promptBody("say partial\nerror exploded"));
    expect(failed.status).toBe(200);
    expect(failed.chunks!.at(-2)).toMatchObject({ choices: [{ finish_reason: "error" }], error: { code: 502, metadata: { reason: "turn_failed" } } });
  });

  it.each([
    ["400 for stream false", { messages: [{ role: "user", content: "x" }], stream: false }, "api", undefined, 400],
    ["400 for malformed JSON", "{", "api", undefined, 400],
    ["401 without a key", promptBody("x"), null, undefined, 401],
    ["403 for a key whose creator left", promptBody("x"), "departed", undefined, 403],
    ["404 for an unknown intern", promptBody("x"), "api", "nobody", 404],
    ["404 outside the programme (a management key's organization is in it, so use the programme switch)", promptBody("x"), "api", undefined, 404],
    ["409 intern_not_ready", promptBody("x"), "api", "asleep", 409],
    ["413 above 1 MiB", promptBody("x".repeat(1024 * 1024)), "api", undefined, 413],
  ])("%s", async (name, body, kind, intern, status) => {
    const key = kind === "api" ? h.t.tenant.api_key : kind === "departed" ? departedKey : null;
    const outside = name.includes("outside the programme");
    if (outside) await h.t.admin.setProgrammeMembership({ orgId: h.t.tenant.organization_id, member: false });
    try {
      const refused = await chat(body, key, intern);
      expect(refused.status).toBe(status);
    } finally {
      if (outside) await h.t.admin.setProgrammeMembership({ orgId: h.t.tenant.organization_id, member: true });
    }
  });

  it("502 intern_unreachable, then 429 past the member's turns per minute", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= perMinute; i++) statuses.push((await chat(promptBody("x"), brokeKey, "unreachable")).status);
    expect(statuses).toEqual([...Array(perMinute).fill(502), 429]);
  });
});
