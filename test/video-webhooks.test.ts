import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { trace } from "@opentelemetry/api";
import { createVideoWebhookDelivery } from "../src/core/video/video-webhook-delivery.js";
import { createWebhookSender, verifyWebhookSignature } from "../src/providers/webhook/index.js";
import { startTestServer, type TestServer } from "./support/test-server.js";
import { postVideo, waitForVideo, writeVideoModelsFile } from "./support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./video-providers/fake-openai-videos.js";
import { createTestCertificate, startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from "./webhook/https-receiver.js";

const run = promisify(execFile);
const secret = "whsec_video_test_secret";
const upstreamKey = "sk-upstream-test";

let t: TestServer;
/** Short time to live; `idle` runs no jobs (an API-only replica), so its jobs wait until the sweeper expires them. */
let running: TestServer;
let idle: TestServer;
let receiver: HttpsReceiver;
let upstream: FakeOpenAiVideos;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "switchboard-video-webhooks-"));
  const certificate = await createTestCertificate();
  writeFileSync(join(dir, "ca.pem"), certificate.cert);
  receiver = await startHttpsReceiver(certificate);
  upstream = await startFakeOpenAiVideos(upstreamKey);
  const modelsFile = writeVideoModelsFile(dir, [
    // Past the renderer's own 60 s ceiling: the provider refuses at submit, so the job fails.
    { id: "local/too-long", provider: "local", capabilities: { max_duration_seconds: 100 } },
    // Polled once a minute: stays in progress for as long as any test waits.
    { id: "fake/slow", provider: "openai-videos", slug: "fake", base_url: upstream.baseUrl, api_key: upstreamKey, upstream_model: "sora-2", poll_interval_ms: 60_000, pricing: { per_video: 0.5 } },
  ]);
  // The receiver is on loopback, which only the operator's switch allows; its self-signed certificate is the CA.
  const env = { MODELS_FILE: modelsFile, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: join(dir, "ca.pem") };
  const ttl = { ...env, VIDEO_JOB_TTL_SECONDS: "3", VIDEO_JOB_LEASE_SECONDS: "1" };
  [t, running, idle] = await Promise.all([startTestServer(env), startTestServer(ttl), startTestServer({ ...ttl, VIDEO_WORKERS: "0" })]);
  for (const server of [running, idle]) {
    await server.admin.setWebhookSettings({ orgId: server.tenant.organization_id, signingSecret: secret, callbackUrl: hookUrl(`/hooks/ttl/${server === idle ? "idle" : "running"}`) });
  }
  // The operator sets the signing secret with the CLI, as documented.
  const argv = ["bin/switchboard.js", "admin", "--server", t.httpUrl, "--token", t.server.adminToken, "webhook", "set", "--org", t.tenant.organization_id, "--secret", secret];
  const { stdout } = await run(process.execPath, argv, { cwd: join(import.meta.dirname, "..") });
  expect(JSON.parse(stdout)).toEqual({});
});

afterAll(async () => {
  await Promise.all([t?.close(), running?.close(), idle?.close()]);
  await receiver?.close();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  receiver.requests.length = 0;
});

const hookUrl = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;

async function received(path: string, count = 1, timeoutMs = 20_000): Promise<ReceivedRequest[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const matching = receiver.requests.filter((request) => request.path === path);
    if (matching.length >= count) return matching;
    if (Date.now() > deadline) throw new Error(`${path}: ${matching.length} of ${count} webhooks after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("video webhooks", () => {
  it("delivers the signed, idempotency-keyed completion event to the job's callback_url, and records it", async () => {
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "hook", duration: 1, callback_url: hookUrl("/hooks/completed?source=sb") });
    const { job } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url);
    const [hook] = await received("/hooks/completed?source=sb");
    expect(hook.method).toBe("POST");
    expect(hook.headers["content-type"]).toBe("application/json");
    expect(hook.headers["idempotency-key"]).toBe(`${job.id}-completed`);
    expect(verifyWebhookSignature(secret, hook.headers["x-webhook-signature"] as string, hook.rawBody)).toBe(true);
    expect(verifyWebhookSignature("another secret of length", hook.headers["x-webhook-signature"] as string, hook.rawBody)).toBe(false);
    expect(JSON.parse(hook.rawBody)).toEqual({
      type: "video.generation.completed",
      created_at: expect.any(Number),
      data: { id: job.id, status: "completed", generation_id: job.generation_id, model: "local/test-pattern", unsigned_urls: job.unsigned_urls, usage: { cost: 0.01, is_byok: false } },
    });
    await expect.poll(() => t.server.store.webhookDeliveries.forJob(job.id)).toEqual([
      { jobId: job.id, url: hookUrl("/hooks/completed?source=sb"), idempotencyKey: `${job.id}-completed`, attempt: 1, statusCode: 200, durationMs: expect.any(Number), outcome: "delivered" },
    ]);
  });

  it("falls back to the organization's default callback URL, and reports a failure with its error", async () => {
    await t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, callbackUrl: hookUrl("/hooks/default") });
    try {
      const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/too-long", prompt: "too long", duration: 61 });
      const { job } = await waitForVideo(t.httpUrl, t.tenant.api_key, submitted.body.polling_url);
      expect(job).toMatchObject({ status: "failed", error: "duration must be an integer from 1 to 60 seconds." });
      const [hook] = await received("/hooks/default");
      expect(hook.headers["idempotency-key"]).toBe(`${job.id}-failed`);
      expect(JSON.parse(hook.rawBody)).toEqual({
        type: "video.generation.failed",
        created_at: expect.any(Number),
        data: { id: job.id, status: "failed", generation_id: job.generation_id, model: "local/too-long", error: job.error },
      });
    } finally {
      await t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, callbackUrl: "" });
    }
  });

  it("retries a receiver's 5xx with the same body and key, recording each attempt", async () => {
    receiver.script(503);
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "retry", duration: 1, callback_url: hookUrl("/hooks/retry") });
    const [first, second] = await received("/hooks/retry", 2);
    expect(second.rawBody).toBe(first.rawBody);
    expect(second.headers["idempotency-key"]).toBe(first.headers["idempotency-key"]);
    await expect
      .poll(async () => (await t.server.store.webhookDeliveries.forJob(submitted.body.id)).map(({ attempt, statusCode, outcome }) => ({ attempt, statusCode, outcome })))
      .toEqual([{ attempt: 1, statusCode: 503 }, { attempt: 2, statusCode: 200, outcome: "delivered" }]);
  });

  it("hands a delivery whose receiver stayed down back to the queue, which later sends the same event", async () => {
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, { model: "local/test-pattern", prompt: "hand back", duration: 1, callback_url: hookUrl("/hooks/first") });
    await received("/hooks/first");
    // The handler the queue runs, with a sender that gives up after two quick attempts.
    const deliver = createVideoWebhookDelivery({
      store: t.server.store,
      sender: createWebhookSender({ allowPrivate: true, ca: readFileSync(join(dir, "ca.pem"), "utf8"), maxAttempts: 2, baseDelayMs: 10 }),
      logger: { info: () => undefined, warn: () => undefined },
      tracer: trace.getTracer("test"),
    });
    receiver.script(503, 503);
    await expect(deliver({ jobId: submitted.body.id, url: hookUrl("/hooks/down") })).rejects.toThrow(/retried later/);
    await deliver({ jobId: submitted.body.id, url: hookUrl("/hooks/down") });
    const attempts = await received("/hooks/down", 3);
    expect(new Set(attempts.map((request) => request.rawBody)).size).toBe(1);
    expect(new Set(attempts.map((request) => request.headers["idempotency-key"]))).toEqual(new Set([`${submitted.body.id}-completed`]));
  });

  it("lets the operator set the secret and default URL only to valid values", async () => {
    await expect(t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, callbackUrl: "http://hooks.example/" })).rejects.toThrow(/https/);
    await expect(t.admin.setWebhookSettings({ orgId: t.tenant.organization_id, signingSecret: "short" })).rejects.toThrow(/16 to 256/);
    await expect(t.admin.setWebhookSettings({ orgId: "org_missing", signingSecret: secret })).rejects.toThrow(/not found/);
  });
});

describe("video job time to live", () => {
  it.each([
    ["a running job", () => running, "/hooks/ttl/running", true],
    ["a job no worker took", () => idle, "/hooks/ttl/idle", false],
  ] as const)("expires %s, refunds it and sends its webhook", async (_name, server, path, started) => {
    const { httpUrl, tenant, server: instance } = server();
    const before = await instance.store.organizations.credits(tenant.organization_id);
    const submitted = await postVideo(httpUrl, tenant.api_key, { model: "fake/slow", prompt: "never done" });
    expect(await instance.store.organizations.credits(tenant.organization_id)).toBeCloseTo(before! - 0.5, 6);
    if (started) await waitForVideo(httpUrl, tenant.api_key, submitted.body.polling_url, { until: (job) => job.status === "in_progress" });

    const { job } = await waitForVideo(httpUrl, tenant.api_key, submitted.body.polling_url);
    expect(job).toEqual({
      ...submitted.body,
      status: "expired",
      ...(started && { generation_id: expect.any(String) }),
      error: "The video generation expired before it completed.",
    });
    expect((await instance.store.videoJobs.get(job.id))?.claims).toBe(started ? 1 : 0);
    expect(await instance.store.organizations.credits(tenant.organization_id)).toBeCloseTo(before!, 6);
    const [hook] = await received(path);
    expect(hook.headers["idempotency-key"]).toBe(`${job.id}-expired`);
    expect(verifyWebhookSignature(secret, hook.headers["x-webhook-signature"] as string, hook.rawBody)).toBe(true);
    expect(JSON.parse(hook.rawBody).data).toEqual({ id: job.id, status: "expired", ...(started && { generation_id: job.generation_id }), model: "fake/slow", error: job.error });
  });
});
