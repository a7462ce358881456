import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  checkOutboundUrl,
  createVideoWebhookEvent,
  createWebhookSender,
  verifyWebhookSignature,
  videoWebhookIdempotencyKey,
  type HostResolver,
  type WebhookAttempt,
  type WebhookSenderOptions,
} from "../../src/providers/webhook/index.js";
import { createTestCertificate, startHttpsReceiver, type HttpsReceiver, type TestCertificate } from "./https-receiver.js";

const secret = "whsec_test_secret";

/** hooks.test does not exist in real DNS: reaching the receiver proves the checked lookup is what the socket used. */
const hooksTestResolver: HostResolver = async (hostname) => {
  if (hostname === "hooks.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};

const completedJob = {
  id: "job_123",
  status: "completed" as const,
  generation_id: "gen_456",
  model: "local/test-pattern",
  unsigned_urls: ["https://gateway.example/api/v1/videos/job_123/content?index=0"],
  usage: { cost: 0.05, is_byok: false },
};

let certificate: TestCertificate;
let receiver: HttpsReceiver;

beforeAll(async () => {
  certificate = await createTestCertificate();
  receiver = await startHttpsReceiver(certificate);
});

afterAll(async () => {
  await receiver.close();
});

beforeEach(() => {
  receiver.requests.length = 0;
});

function sender(overrides: WebhookSenderOptions = {}) {
  return createWebhookSender({ ca: certificate.cert, baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000, ...overrides });
}

describe("webhook delivery", () => {
  it("posts the signed event with its idempotency key to the resolved, checked address", async () => {
    const event = createVideoWebhookEvent(completedJob);
    const attempts: WebhookAttempt[] = [];
    const result = await sender({ allowPrivate: true, resolveHost: hooksTestResolver }).deliver({
      url: `https://hooks.test:${receiver.port}/hooks/video?source=switchboard`,
      body: event,
      idempotencyKey: videoWebhookIdempotencyKey(completedJob),
      signingSecret: secret,
      onAttempt: (attempt) => void attempts.push(attempt),
    });

    expect(result).toEqual({ outcome: "delivered", attempts: 1, status: 200 });
    expect(attempts).toEqual([{ attempt: 1, status: 200, durationMs: expect.any(Number), willRetry: false }]);
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received.method).toBe("POST");
    expect(received.path).toBe("/hooks/video?source=switchboard");
    expect(received.headers["content-type"]).toBe("application/json");
    expect(received.headers["idempotency-key"]).toBe("job_123-completed");
    expect(verifyWebhookSignature(secret, received.headers["x-webhook-signature"] as string, received.rawBody, 60)).toBe(true);
    expect(verifyWebhookSignature("another secret", received.headers["x-webhook-signature"] as string, received.rawBody, 60)).toBe(false);
    expect(JSON.parse(received.rawBody)).toEqual({
      type: "video.generation.completed",
      created_at: event.created_at,
      data: {
        id: "job_123",
        status: "completed",
        generation_id: "gen_456",
        model: "local/test-pattern",
        unsigned_urls: completedJob.unsigned_urls,
        usage: { cost: 0.05, is_byok: false },
      },
    });
  });

  it("sends no signature header without a signing secret", async () => {
    const result = await sender({ allowPrivate: true }).deliver({
      url: `https://localhost:${receiver.port}/`,
      body: { hello: "world" },
      idempotencyKey: "k-1",
    });
    expect(result.outcome).toBe("delivered");
    expect(receiver.requests[0].headers["x-webhook-signature"]).toBeUndefined();
  });

  it("retries after 500s with the same body and key, re-signing each attempt", async () => {
    receiver.script(500, 503);
    const attempts: WebhookAttempt[] = [];
    const result = await sender({ allowPrivate: true }).deliver({
      url: `https://localhost:${receiver.port}/`,
      body: createVideoWebhookEvent({ id: "job_9", status: "failed", model: "m", error: "The provider failed." }),
      idempotencyKey: "job_9-failed",
      signingSecret: secret,
      onAttempt: (attempt) => void attempts.push(attempt),
    });

    expect(result).toEqual({ outcome: "delivered", attempts: 3, status: 200 });
    expect(attempts.map(({ attempt, status, error, willRetry }) => ({ attempt, status, error, willRetry }))).toEqual([
      { attempt: 1, status: 500, error: "HTTP 500", willRetry: true },
      { attempt: 2, status: 503, error: "HTTP 503", willRetry: true },
      { attempt: 3, status: 200, error: undefined, willRetry: false },
    ]);
    expect(new Set(receiver.requests.map((request) => request.rawBody)).size).toBe(1);
    expect(receiver.requests.map((request) => request.headers["idempotency-key"])).toEqual(["job_9-failed", "job_9-failed", "job_9-failed"]);
    for (const request of receiver.requests) {
      expect(verifyWebhookSignature(secret, request.headers["x-webhook-signature"] as string, request.rawBody, 60)).toBe(true);
    }
    expect(JSON.parse(receiver.requests[0].rawBody).data).toEqual({ id: "job_9", status: "failed", model: "m", error: "The provider failed." });
  });

  it("retries 429 but not other 4xx", async () => {
    receiver.script({ status: 429, headers: { "retry-after": "0" } }, 200);
    const throttled = await sender({ allowPrivate: true }).deliver({ url: `https://localhost:${receiver.port}/`, body: {}, idempotencyKey: "a" });
    expect(throttled).toMatchObject({ outcome: "delivered", attempts: 2 });

    receiver.script(410);
    const rejected = await sender({ allowPrivate: true }).deliver({ url: `https://localhost:${receiver.port}/`, body: {}, idempotencyKey: "b" });
    expect(rejected).toEqual({ outcome: "rejected", attempts: 1, status: 410, error: "HTTP 410" });
  });

  it("gives up after maxAttempts", async () => {
    receiver.script(500, 500, 500);
    const result = await sender({ allowPrivate: true, maxAttempts: 3 }).deliver({ url: `https://localhost:${receiver.port}/`, body: {}, idempotencyKey: "c" });
    expect(result).toEqual({ outcome: "exhausted", attempts: 3, status: 500, error: "HTTP 500" });
    expect(receiver.requests).toHaveLength(3);
  });

  it("retries network errors", async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const attempts: WebhookAttempt[] = [];
    const result = await sender({ allowPrivate: true, maxAttempts: 2 }).deliver({
      url: `https://127.0.0.1:${port}/`,
      body: {},
      idempotencyKey: "d",
      onAttempt: (attempt) => void attempts.push(attempt),
    });
    expect(result.outcome).toBe("exhausted");
    expect(attempts.map((attempt) => attempt.willRetry)).toEqual([true, false]);
    expect(attempts[0].error).toMatch(/ECONNREFUSED/);
  });

  it("refuses http:// without sending anything", async () => {
    const attempts: WebhookAttempt[] = [];
    const result = await sender({ allowPrivate: true }).deliver({
      url: `http://localhost:${receiver.port}/`,
      body: {},
      idempotencyKey: "e",
      onAttempt: (attempt) => void attempts.push(attempt),
    });
    expect(result).toMatchObject({ outcome: "refused", attempts: 0, refusal: "https_required" });
    expect(attempts).toEqual([]);
    expect(receiver.requests).toEqual([]);
  });

  it("refuses loopback (by name or literal) unless allowPrivate", async () => {
    for (const url of [`https://localhost:${receiver.port}/`, `https://127.0.0.1:${receiver.port}/`, `https://[::ffff:127.0.0.1]:${receiver.port}/`]) {
      const result = await sender().deliver({ url, body: {}, idempotencyKey: "f" });
      expect(result, url).toMatchObject({ outcome: "refused", attempts: 1, refusal: "forbidden_address" });
    }
    expect(receiver.requests).toEqual([]);
    const allowed = await sender({ allowPrivate: true }).deliver({ url: `https://127.0.0.1:${receiver.port}/`, body: {}, idempotencyKey: "f" });
    expect(allowed.outcome).toBe("delivered");
  });

  it("refuses a host that rebinds to a private address after the submit-time check", async () => {
    let queries = 0;
    const rebinding: HostResolver = async () => (++queries === 1 ? [{ address: "93.184.215.14", family: 4 }] : [{ address: "10.0.0.7", family: 4 }]);
    await expect(checkOutboundUrl("https://rebind.example/hook", { resolveHost: rebinding })).resolves.toMatchObject({
      addresses: [{ address: "93.184.215.14", family: 4 }],
    });

    const attempts: WebhookAttempt[] = [];
    const result = await sender({ resolveHost: rebinding }).deliver({
      url: "https://rebind.example/hook",
      body: {},
      idempotencyKey: "g",
      onAttempt: (attempt) => void attempts.push(attempt),
    });
    expect(result).toMatchObject({ outcome: "refused", attempts: 1, refusal: "forbidden_address" });
    expect(attempts).toEqual([{ attempt: 1, error: expect.stringContaining("non-public address (private)"), durationMs: expect.any(Number), willRetry: false }]);
  });

  it("refuses a host answering with a mix of public and loopback addresses", async () => {
    const mixed: HostResolver = async () => [
      { address: "93.184.215.14", family: 4 },
      { address: "127.0.0.1", family: 4 },
    ];
    const result = await sender({ resolveHost: mixed }).deliver({ url: `https://mixed.example:${receiver.port}/`, body: {}, idempotencyKey: "h" });
    expect(result).toMatchObject({ outcome: "refused", refusal: "forbidden_address" });
    expect(receiver.requests).toEqual([]);
  });

  it("fails certificate checks against an untrusted receiver, as a retryable error", async () => {
    const result = await createWebhookSender({ allowPrivate: true, maxAttempts: 1 }).deliver({
      url: `https://localhost:${receiver.port}/`,
      body: {},
      idempotencyKey: "i",
    });
    expect(result.outcome).toBe("exhausted");
    expect(result.error).toMatch(/certificate/i);
    expect(receiver.requests).toEqual([]);
  });

  it("stops waiting to retry when the sender closes", async () => {
    receiver.script(500);
    const closing = sender({ allowPrivate: true, baseDelayMs: 10_000, maxDelayMs: 10_000 });
    const delivery = closing.deliver({
      url: `https://localhost:${receiver.port}/`,
      body: {},
      idempotencyKey: "j",
      onAttempt: () => closing.close(),
    });
    await expect(delivery).resolves.toMatchObject({ outcome: "aborted", attempts: 1 });
  });

  it("times out an attempt whose receiver never answers", async () => {
    const sockets = new Set<Socket>();
    const silent = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const result = await sender({ allowPrivate: true, maxAttempts: 1, timeoutMs: 200 }).deliver({
        url: `https://127.0.0.1:${(silent.address() as AddressInfo).port}/`,
        body: {},
        idempotencyKey: "k",
      });
      expect(result).toMatchObject({ outcome: "exhausted", attempts: 1, error: "No answer within 200 ms." });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
