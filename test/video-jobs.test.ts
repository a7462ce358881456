import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { VideoService } from "../src/gen/switchboard/v1/video_pb.js";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { getVideo, postVideo, waitForVideo, writeVideoModelsFile } from "./support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./video-providers/fake-openai-videos.js";
import { collect, mp4Info } from "./video-providers/mp4-info.js";

let t: TestServer;
let upstream: FakeOpenAiVideos;
let modelsDir: string;
let otherKey: string;
const upstreamKey = "sk-upstream-test";

beforeAll(async () => {
  upstream = await startFakeOpenAiVideos(upstreamKey);
  modelsDir = mkdtempSync(join(tmpdir(), "switchboard-video-models-"));
  const modelsFile = writeVideoModelsFile(modelsDir, [
    {
      id: "fake/sora",
      provider: "openai-videos",
      slug: "fake",
      base_url: upstream.baseUrl,
      api_key: upstreamKey,
      upstream_model: "sora-2",
      poll_interval_ms: 20,
      capabilities: { durations: [4, 8], sizes: ["1280x720", "720x1280"] },
      pricing: { per_second: 0.1 },
    },
  ]);
  t = await startTestServer({ MODELS_FILE: modelsFile });
  const other = await t.admin.createOrganization({ name: "Other" });
  const member = await t.admin.addMember({ orgId: other.id, email: "o@other.example", role: "org:admin" });
  await t.admin.setCredits({ orgId: other.id, usd: 5 });
  otherKey = (await t.admin.createKey({ orgId: other.id, memberId: member.id })).key;
});

afterAll(async () => {
  await t?.close();
  await upstream?.close();
  rmSync(modelsDir, { recursive: true, force: true });
});

const credits = () => t.server.store.organizations.credits(t.tenant.organization_id);

describe("video jobs over HTTP", () => {
  it("submits, polls through the statuses, completes with usage and serves a real MP4", async () => {
    const before = await credits();
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "a teal ocean", duration: 2, size: "640x360", seed: 3 });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toEqual({ id: expect.stringMatching(/^vid_/), polling_url: `/api/v1/videos/${submitted.body.id}`, status: "pending" });
    // The price (0.01 USD a second) is reserved at submit.
    expect(await credits()).toBeCloseTo(before! - 0.02, 6);

    const running: any[] = [];
    const { job, seen } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url, {
      until: (polled) => (polled.status === "in_progress" && running.push(polled), polled.status === "completed"),
    });
    // A worker took it: it has a generation id, and nothing of a completed job yet.
    for (const polled of running) expect(Object.keys(polled).sort()).toEqual(["generation_id", "id", "polling_url", "status"]);
    expect(seen.filter((status) => status !== "pending")).toEqual(seen.includes("in_progress") ? ["in_progress", "completed"] : ["completed"]);
    expect(job).toEqual({
      id: submitted.body.id,
      polling_url: submitted.body.polling_url,
      status: "completed",
      generation_id: expect.stringMatching(/^gen-/),
      unsigned_urls: [`/api/v1/videos/${submitted.body.id}/content?index=0`],
      usage: { cost: 0.02, is_byok: false },
    });
    expect(await credits()).toBeCloseTo(before! - 0.02, 6);

    const content = await fetch(`${t.httpUrl}${job.unsigned_urls[0]}`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("video/mp4");
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(Number(content.headers.get("content-length"))).toBe(bytes.length);
    const info = mp4Info(bytes);
    expect([info.videoTracks[0].track_width, info.videoTracks[0].track_height]).toEqual([640, 360]);
    expect(Math.abs(info.duration / info.timescale - 2)).toBeLessThanOrEqual(1 / 12);
  });

  it("reports the upstream's failure as error, keeps generation_id, and refunds", async () => {
    const before = await credits();
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "fake/sora", prompt: "something forbidden", duration: 4 });
    expect(submitted.status).toBe(200);
    expect(await credits()).toBeCloseTo(before! - 0.4, 6);
    const { job } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url);
    expect(job).toEqual({
      id: submitted.body.id,
      polling_url: submitted.body.polling_url,
      status: "failed",
      generation_id: expect.stringMatching(/^gen-/),
      error: "Your request was blocked by our moderation system.",
    });
    expect(await credits()).toBeCloseTo(before!, 6);
    const content = await fetch(`${t.httpUrl}/api/v1/videos/${job.id}/content`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
    expect(content.status).toBe(404);
  });

  it("passes x-session-id through, the body's session_id beating it", async () => {
    const headed = await postVideo(t.httpUrl, t.tenant.api_key, { model: "fake/sora", prompt: "session", user: "end-user-7" }, { "x-session-id": "from-header" });
    const both = await postVideo(t.httpUrl, t.tenant.api_key, { model: "fake/sora", prompt: "session", session_id: "from-body" }, { "x-session-id": "from-header" });
    const stored = await t.server.store.videoJobs.get(headed.body.id);
    expect(stored).toMatchObject({ sessionId: "from-header", endUser: "end-user-7" });
    expect((await t.server.store.videoJobs.get(both.body.id))?.sessionId).toBe("from-body");
    // An empty session_id is none, as on the speech route: the header stands.
    const empty = await postVideo(t.httpUrl, t.tenant.api_key, { model: "fake/sora", prompt: "session", session_id: "", user: "" }, { "x-session-id": "from-header" });
    const emptyJob = await t.server.store.videoJobs.get(empty.body.id);
    expect([emptyJob?.sessionId, emptyJob?.endUser]).toEqual(["from-header", undefined]);
    // Never sent to the provider.
    expect(stored?.request).not.toHaveProperty("session_id");
    expect(stored?.request).not.toHaveProperty("user");
  });

  it("refuses with 402 when the organization's credits are short, charging nothing", async () => {
    const org = await t.admin.createOrganization({ name: "Poor" });
    const member = await t.admin.addMember({ orgId: org.id, email: "p@poor.example", role: "org:admin" });
    await t.admin.setCredits({ orgId: org.id, usd: 0.01 });
    const key = (await t.admin.createKey({ orgId: org.id, memberId: member.id })).key;
    const refused = await postVideo(t.httpUrl, key, { model: "local/test-pattern", prompt: "too long for the budget", duration: 2 });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ code: 402, metadata: { reason: "insufficient_credits", retryable: false } });
    expect(await t.server.store.organizations.credits(org.id)).toBe(0.01);
    // One second costs exactly what is left.
    expect((await postVideo(t.httpUrl, key, { model: "local/test-pattern", prompt: "just enough", duration: 1 })).status).toBe(200);
    expect(await t.server.store.organizations.credits(org.id)).toBe(0);
  });

  it("refuses management keys with 403 and missing keys with 401", async () => {
    const forbidden = await postVideo(t.httpUrl, t.tenant.management_key, { model: "local/test-pattern", prompt: "x" });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toMatchObject({ code: 403, message: expect.stringMatching(/management keys/), metadata: { reason: "forbidden" } });
    const anonymous = await postVideo(t.httpUrl, undefined, { model: "local/test-pattern", prompt: "x" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: { code: 401, message: expect.stringMatching(/Authentication header is missing/) } });
  });

  it("hides another organization's job: 404 on poll and content", async () => {
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "mine", duration: 1 });
    const { job } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url);
    const polled = await getVideo(t.httpUrl, otherKey, job.polling_url);
    expect(polled.status).toBe(404);
    expect(polled.body.error.metadata.reason).toBe("not_found");
    const content = await fetch(`${t.httpUrl}${job.unsigned_urls[0]}`, { headers: { authorization: `Bearer ${otherKey}` } });
    expect(content.status).toBe(404);
    expect((await getVideo(t.httpUrl, t.tenant.api_key, "/api/v1/videos/vid_missing")).status).toBe(404);
  });

  it("refuses content that does not exist and a malformed index", async () => {
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "index", duration: 1 });
    const { job } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url);
    const get = (query: string) => fetch(`${t.httpUrl}/api/v1/videos/${job.id}/content${query}`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
    expect((await get("?index=1")).status).toBe(404);
    const malformed = await get("?index=abc");
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.metadata.reason).toBe("bad_request");
    expect((await get("")).status).toBe(200);
  });

  it("refuses a body over 16 MiB with 413", async () => {
    const huge = `data:image/png;base64,${"A".repeat(16 * 1024 * 1024)}`;
    const refused = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "big", frame_images: [{ type: "image_url", image_url: { url: huge }, frame_type: "first_frame" }] });
    expect(refused.status).toBe(413);
    expect(refused.body.error).toMatchObject({ code: 413, metadata: { reason: "payload_too_large" } });
  });

  it("accepts a first frame as a data URI above the surface's 1 MiB", async () => {
    const frame = `data:image/png;base64,${"A".repeat(2 * 1024 * 1024)}`;
    const accepted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "fake/sora", prompt: "big frame", frame_images: [{ type: "image_url", image_url: { url: frame }, frame_type: "first_frame" }] });
    expect(accepted.status).toBe(200);
  });
});

describe("VideoService over gRPC", () => {
  it("runs the same lifecycle and streams the same kind of MP4", async () => {
    const client = createClient(VideoService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const { job } = await client.createVideo({ model: "local/test-pattern", prompt: "grpc", duration: 1n, resolution: "480p", aspectRatio: "16:9" });
    expect(job).toMatchObject({ status: "pending", pollingUrl: `/api/v1/videos/${job!.id}` });
    let polled = (await client.getVideo({ id: job!.id })).job!;
    for (const deadline = Date.now() + 40_000; polled.status !== "completed" && Date.now() < deadline; polled = (await client.getVideo({ id: job!.id })).job!) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(polled).toMatchObject({ status: "completed", usage: { cost: 0.01, isByok: false }, unsignedUrls: [`/api/v1/videos/${job!.id}/content?index=0`] });
    const messages = await collect(
      (async function* () {
        let first = true;
        for await (const message of client.getVideoContent({ id: job!.id })) {
          if (first) expect(message.event).toMatchObject({ case: "start", value: { contentType: "video/mp4" } });
          else if (message.event.case === "data") yield message.event.value;
          first = false;
        }
      })(),
    );
    const track = mp4Info(messages).videoTracks[0];
    expect([track.track_width, track.track_height]).toEqual([640, 360]);
    expect(track.nb_samples).toBe(12);
  });

  it("refuses with the same error details as HTTP", async () => {
    const client = createClient(VideoService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const invalid = await client.createVideo({ model: "local/test-pattern" }).catch((e: unknown) => ConnectError.from(e));
    expect((invalid as ConnectError).code).toBe(Code.InvalidArgument);
    expect((invalid as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 400, reason: "bad_request" });
    const management = createClient(VideoService, grpcTransportFor(t.grpcUrl, t.tenant.management_key));
    const forbidden = await management.getVideo({ id: "vid_x" }).catch((e: unknown) => ConnectError.from(e));
    expect((forbidden as ConnectError).code).toBe(Code.PermissionDenied);
    const other = createClient(VideoService, grpcTransportFor(t.grpcUrl, otherKey));
    const hidden = await other.getVideo({ id: "vid_x" }).catch((e: unknown) => ConnectError.from(e));
    expect((hidden as ConnectError).code).toBe(Code.NotFound);
  });
});
