import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./support/test-server.js";
import { postVideo, writeVideoModelsFile } from "./support/video-client.js";

let t: TestServer;
let modelsDir: string;

beforeAll(async () => {
  modelsDir = mkdtempSync(join(tmpdir(), "switchboard-video-models-"));
  const modelsFile = writeVideoModelsFile(modelsDir, [
    { id: "local/upscaler", provider: "local", capabilities: { upscaling: true, prompt_optional: true, max_duration_seconds: 4 } },
    {
      id: "local/audio",
      provider: "local",
      capabilities: { generate_audio: true, audio_references: true, durations: [2, 4], sizes: ["1280x720", "720x1280"] },
      pricing: { per_second: 0.5, per_second_audio: 0.25 },
    },
  ]);
  t = await startTestServer({ MODELS_FILE: modelsFile });
  await t.admin.setCredits({ orgId: t.tenant.organization_id, usd: 1000 });
});

afterAll(async () => {
  await t?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});

const png = "https://img.example/frame.png";
const frame = (frame_type: string, url = png) => ({ type: "image_url", image_url: { url }, frame_type });
const base = { model: "local/test-pattern", prompt: "a red square", duration: 1 };
const long = "x".repeat(257);

describe("POST /api/v1/videos refuses an invalid member with 400", () => {
  it.each<[string, unknown, RegExp, Record<string, string>?]>([
    ["a body that is not an object", [1], /must be a JSON object/],
    ["a body that is not JSON", "{nope", /not valid JSON/],
    ["no model", { prompt: "p" }, /model is required/],
    ["an unknown model, listing the known ones", { ...base, model: "acme/v1" }, /model must be one of local\/test-pattern, local\/upscaler, local\/audio/],
    ["no prompt for a model that needs one", { model: "local/test-pattern" }, /prompt is required for local\/test-pattern/],
    ["a blank prompt", { ...base, prompt: "   " }, /prompt is required/],
    ["neither prompt nor image for a prompt-optional model", { model: "local/upscaler" }, /needs a prompt or an image/],
    ["an aspect_ratio outside the enum", { ...base, aspect_ratio: "5:4" }, /aspect_ratio must be one of 16:9, 9:16/],
    ["a resolution outside the enum", { ...base, resolution: "360p" }, /resolution must be one of 480p, 720p/],
    ["duration 0", { ...base, duration: 0 }, /duration must be an integer of at least 1/],
    ["a negative duration", { ...base, duration: -3 }, /duration must be an integer of at least 1/],
    ["a fractional duration", { ...base, duration: 1.5 }, /Invalid request body/],
    ["a duration that is not a number", { ...base, duration: "soon" }, /^duration must be a number\.$/],
    ["a duration over the model's maximum", { ...base, duration: 21 }, /duration must be at most 20 seconds/],
    ["a duration the model does not offer", { ...base, model: "local/audio", duration: 3 }, /duration must be one of 2, 4 seconds/],
    ["a malformed size", { ...base, size: "big" }, /size must be WIDTHxHEIGHT/],
    ["a size that conflicts with resolution", { ...base, size: "1280x720", resolution: "1080p" }, /conflicts with resolution 1080p/],
    ["a size that conflicts with aspect_ratio", { ...base, size: "1280x720", aspect_ratio: "9:16" }, /conflicts with aspect_ratio 9:16/],
    ["a size the model does not offer", { ...base, model: "local/audio", duration: 2, size: "640x360" }, /not offered by local\/audio/],
    ["a resolution the model does not offer", { ...base, model: "local/audio", duration: 2, resolution: "1080p" }, /1920x1080 is not offered/],
    ["an http callback_url", { ...base, callback_url: "http://hooks.example/video" }, /callback_url: The URL must use https/],
    ["a callback_url that is not a URL", { ...base, callback_url: "hooks" }, /callback_url: The URL is not a valid absolute URL/],
    ["a callback_url with credentials", { ...base, callback_url: "https://u:p@hooks.example/" }, /callback_url: The URL must not contain credentials/],
    ["a callback_url at a loopback address, however spelled", { ...base, callback_url: "https://127.1/hook" }, /callback_url: The destination resolves to a non-public address \(loopback\)/],
    ["a callback_url at a decimal loopback address", { ...base, callback_url: "https://2130706433/hook" }, /callback_url: The destination resolves to a non-public address \(loopback\)/],
    ["a callback_url at an IPv4-mapped loopback address", { ...base, callback_url: "https://[::ffff:127.0.0.1]/hook" }, /callback_url: The destination resolves to a non-public address \(loopback\)/],
    ["a callback_url at the metadata service", { ...base, callback_url: "https://169.254.169.254/latest" }, /callback_url: The destination resolves to a non-public address \(link-local\)/],
    ["creativity on a generation model", { ...base, creativity: 3 }, /creativity is for upscaling models only/],
    ["upscale_factor on a generation model", { ...base, upscale_factor: 2 }, /upscale_factor is for upscaling models only/],
    ["upscale_factor 0", { model: "local/upscaler", prompt: "p", upscale_factor: 0 }, /upscale_factor must be a number greater than 0/],
    ["a negative upscale_factor", { model: "local/upscaler", prompt: "p", upscale_factor: -1 }, /greater than 0/],
    ["upscale_factor NaN", { model: "local/upscaler", prompt: "p", upscale_factor: "NaN" }, /^upscale_factor must be a number\.$/],
    ["a negative creativity", { model: "local/upscaler", prompt: "p", creativity: -1 }, /creativity must be an integer of at least 0/],
    ["a fractional creativity", { model: "local/upscaler", prompt: "p", creativity: 0.5 }, /Invalid request body/],
    ["frame_images that is not an array", { ...base, frame_images: "first" }, /Invalid request body/],
    ["a frame image without frame_type", { ...base, frame_images: [{ type: "image_url", image_url: { url: png } }] }, /frame_images\[0\]\.frame_type must be first_frame or last_frame/],
    ["a frame image with another frame_type", { ...base, frame_images: [frame("middle_frame")] }, /frame_type must be first_frame or last_frame/],
    ["a frame image of another type", { ...base, frame_images: [{ ...frame("first_frame"), type: "video_url" }] }, /frame_images\[0\]\.type must be image_url/],
    ["a frame image without url", { ...base, frame_images: [{ type: "image_url", image_url: {}, frame_type: "first_frame" }] }, /frame_images\[0\]\.image_url\.url is required/],
    ["a frame image with an ftp url", { ...base, frame_images: [frame("first_frame", "ftp://img.example/x.png")] }, /http\(s\) URL or a data: URI/],
    ["two first frames", { ...base, frame_images: [frame("first_frame"), frame("first_frame")] }, /only one first_frame/],
    ["a generate_audio that is not a boolean", { ...base, generate_audio: "yes" }, /Invalid request body/],
    ["an input reference of an unknown type", { ...base, input_references: [{ type: "text", text: "x" }] }, /input_references\[0\]\.type must be image_url, audio_url or video_url/],
    ["an input reference missing its own member", { ...base, input_references: [{ type: "audio_url", image_url: { url: png } }] }, /input_references\[0\]\.audio_url\.url is required/],
    ["provider that is not an object", { ...base, provider: "local" }, /Invalid request body/],
    ["provider.options that is not an object", { ...base, provider: { options: ["local"] } }, /provider\.options must be an object/],
    ["provider options of a slug that are not an object", { ...base, provider: { options: { local: 3 } } }, /provider\.options\.local must be an object/],
    ["a fractional seed", { ...base, seed: 1.5 }, /Invalid request body/],
    ["a seed beyond 2^53", { ...base, seed: 2 ** 60 }, /seed must be an integer from/],
    ["a session_id over 256 characters", { ...base, session_id: long }, /session_id must be at most 256 characters/],
    ["an x-session-id header over 256 characters", base, /x-session-id header must be at most 256 characters/, { "x-session-id": long }],
    ["a user over 256 characters", { ...base, user: long }, /user must be at most 256 characters/],
    ["trace that is not an object", { ...base, trace: "t-1" }, /Invalid request body/],
    ["a known trace key that is not a string", { ...base, trace: { trace_id: 5 } }, /trace\.trace_id must be a string/],
    ["a NUL character in the prompt (PostgreSQL cannot store it)", { ...base, prompt: "a\u0000b" }, /^prompt must not contain the NUL character/],
    ["a NUL character deep in provider options", { ...base, provider: { options: { local: { style: "x\u0000" } } } }, /^provider\.options\.local\.style must not contain the NUL/],
    ["a NUL character in a trace value", { ...base, trace: { generation_name: "\u0000" } }, /^trace\.generation_name must not contain the NUL/],
    ["a session_id over 256 characters, counted as characters", { ...base, session_id: "😀".repeat(257) }, /session_id must be at most 256 characters/],
  ])("%s", async (_name, body, message, headers) => {
    const { status, body: answer } = await postVideo(t.httpUrl, t.tenant.api_key, body, headers);
    expect(status).toBe(400);
    expect(answer.error).toEqual({ code: 400, message: expect.stringMatching(message), metadata: { reason: "bad_request", retryable: false } });
  });

  it("takes numbers as JSON numbers only: a duration of \"2\" or \"0x2\" is refused, charging nothing", async () => {
    const credits = () => t.server.store.organizations.credits(t.tenant.organization_id);
    const before = await credits();
    for (const duration of ["2", "0x2", " 2"]) {
      const { status, body } = await postVideo(t.httpUrl, t.tenant.api_key, { ...base, duration });
      expect([status, body.error.message]).toEqual([400, "duration must be a number."]);
    }
    expect(await credits()).toBe(before);
  });
});

describe("GET /api/v1/videos/{id} with an id no job can have", () => {
  it("is not found, on poll and on content", async () => {
    for (const path of ["/api/v1/videos/%00", "/api/v1/videos/vid%00x/content"]) {
      const response = await fetch(`${t.httpUrl}${path}`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
      expect([response.status, (await response.json()).error.metadata.reason]).toEqual([404, "not_found"]);
    }
  });
});

describe("POST /api/v1/videos accepts every member in its valid forms", () => {
  async function accepted(body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const { status, body: job } = await postVideo(t.httpUrl, t.tenant.api_key, body, headers);
    expect(status, JSON.stringify(job)).toBe(200);
    return (await t.server.store.videoJobs.get(job.id))!;
  }

  it("counts characters, not UTF-16 units: 256 emoji are a valid session_id", async () => {
    expect((await accepted({ ...base, session_id: "😀".repeat(256) })).sessionId).toBe("😀".repeat(256));
  });

  it("treats size and resolution + aspect_ratio as interchangeable", async () => {
    await accepted({ ...base, size: "1280x720" });
    await accepted({ ...base, resolution: "720p", aspect_ratio: "16:9" });
    await accepted({ ...base, size: "1280x720", resolution: "720p", aspect_ratio: "16:9" });
    const portrait = await accepted({ ...base, model: "local/audio", duration: 2, resolution: "720p", aspect_ratio: "9:16" });
    expect(portrait.request).toMatchObject({ resolution: "720p", aspect_ratio: "9:16" });
  });

  it("defaults generate_audio to the model's capability and prices it", async () => {
    expect((await accepted(base)).request.generate_audio).toBe(false);
    const withAudio = await accepted({ model: "local/audio", prompt: "sound" });
    expect(withAudio.request.generate_audio).toBe(true);
    expect(withAudio.costUsd).toBe(1.5);
    const silent = await accepted({ model: "local/audio", prompt: "silence", generate_audio: false, duration: 4 });
    expect(silent.request.generate_audio).toBe(false);
    expect(silent.costUsd).toBe(2);
  });

  it("passes audio and video references only to models that honour them", async () => {
    const references = [
      { type: "image_url", image_url: { url: png } },
      { type: "audio_url", audio_url: { url: "https://media.example/a.mp3" } },
      { type: "video_url", video_url: { url: "data:video/mp4;base64,AAAA" } },
    ];
    expect((await accepted({ ...base, input_references: references })).request.input_references).toEqual([references[0]]);
    expect((await accepted({ model: "local/audio", prompt: "r", input_references: references })).request.input_references).toEqual(references.slice(0, 2));
  });

  it("takes upscaling members, and images instead of a prompt, on an upscaling model", async () => {
    const job = await accepted({ model: "local/upscaler", upscale_factor: 2.5, creativity: 3, frame_images: [frame("first_frame"), frame("last_frame", "data:image/png;base64,iVBORw0KGgo=")] });
    expect(job.request).toMatchObject({ upscale_factor: 2.5, creativity: 3, frame_images: [frame("first_frame"), frame("last_frame", "data:image/png;base64,iVBORw0KGgo=")] });
    expect(job.request).not.toHaveProperty("prompt");
    await accepted({ model: "local/upscaler", input_references: [{ type: "image_url", image_url: { url: png } }] });
  });

  it("keeps provider options, seed, callback_url, trace, session_id and user, sending only the first two to the provider", async () => {
    const trace = { trace_id: "t-1", trace_name: "n", span_name: "s", generation_name: "g", parent_span_id: "p", team: "video", attempt: 2 };
    const job = await accepted(
      {
        ...base,
        seed: -42,
        callback_url: "https://hooks.example/video?x=1",
        provider: { options: { local: { style: "bars" }, openai: { quality: "high" } }, order: ["local"] },
        trace,
        session_id: "s".repeat(256),
        user: "u".repeat(256),
      },
      { "x-session-id": "ignored" },
    );
    expect(job.request).toMatchObject({ seed: -42, provider: { options: { local: { style: "bars" }, openai: { quality: "high" } } } });
    expect(job.request.provider).not.toHaveProperty("order");
    expect(job).toMatchObject({ callbackUrl: "https://hooks.example/video?x=1", trace, sessionId: "s".repeat(256), endUser: "u".repeat(256) });
    for (const member of ["callback_url", "trace", "session_id", "user"]) expect(job.request).not.toHaveProperty(member);
  });

  it("ignores members it does not know", async () => {
    await accepted({ ...base, temperature: 0.3, stream: true });
  });

  it("ignores camelCase aliases of its members, at every level", async () => {
    const reference = { type: "image_url", image_url: { url: png } };
    const job = await accepted({ ...base, aspectRatio: "5:4", generateAudio: "yes", sessionId: "alias", input_references: [{ ...reference, imageUrl: { url: "ftp://x" } }] });
    expect(job.request).not.toHaveProperty("aspect_ratio");
    expect(job.request.input_references).toEqual([reference]);
    expect(job.sessionId).not.toBe("alias");
  });

  it("passes camelCase keys inside provider options and trace through unchanged", async () => {
    const trace = { trace_id: "t-1", traceName: "n", nested: { spanName: "s" } };
    const job = await accepted({ ...base, provider: { options: { local: { styleName: "bars", inner: { camelKey: 1 } } } }, trace });
    expect(job.request.provider).toEqual({ options: { local: { styleName: "bars", inner: { camelKey: 1 } } } });
    expect(job.trace).toEqual(trace);
  });
});
