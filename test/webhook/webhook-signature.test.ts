import { describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { createVideoWebhookEvent, signWebhookBody, verifyWebhookSignature, videoWebhookIdempotencyKey } from "../../src/providers/webhook/index.js";

const secret = "whsec_rotating";
const body = JSON.stringify({ type: "video.generation.completed", created_at: 1_700_000_000, data: { id: "job_1" } });
const now = 1_700_000_100;

describe("webhook signature", () => {
  it("is t=<unix>,v1=<hex HMAC-SHA256(secret, '<t>,' + raw body)>", () => {
    const expected = createHmac("sha256", secret).update(`${now},${body}`).digest("hex");
    expect(signWebhookBody(secret, body, now)).toBe(`t=${now},v1=${expected}`);
  });

  it("verifies within the tolerance, and only the exact body and secret", () => {
    const header = signWebhookBody(secret, body, now);
    expect(verifyWebhookSignature(secret, header, body, 300, now + 299)).toBe(true);
    expect(verifyWebhookSignature(secret, header, Buffer.from(body), 300, now)).toBe(true);
    expect(verifyWebhookSignature(secret, header, body, 300, now + 301)).toBe(false);
    expect(verifyWebhookSignature(secret, header, body, 300, now - 301)).toBe(false);
    expect(verifyWebhookSignature(secret, header, `${body} `, 300, now)).toBe(false);
    expect(verifyWebhookSignature("other", header, body, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, header.replace(`t=${now}`, `t=${now + 1}`), body, 300, now)).toBe(false);
  });

  it("accepts any one of several v1 values, so secrets can rotate", () => {
    const current = signWebhookBody(secret, body, now);
    const previous = signWebhookBody("old secret", body, now).split(",")[1];
    expect(verifyWebhookSignature(secret, `${current},${previous}`, body, 300, now)).toBe(true);
    expect(verifyWebhookSignature("old secret", `${current},${previous}`, body, 300, now)).toBe(true);
  });

  it.each([undefined, "", "v1=abc", `t=${now}`, `t=abc,v1=${"0".repeat(64)}`, `t=${now},v1=zz`, `t=${now},v1=${"0".repeat(63)}`])("refuses malformed header %j", (header) => {
    expect(verifyWebhookSignature(secret, header, body, 300, now)).toBe(false);
  });
});

describe("video webhook event", () => {
  it("carries unsigned_urls and usage on completion, error otherwise", () => {
    const at = new Date("2025-01-02T03:04:05.678Z");
    expect(
      createVideoWebhookEvent(
        { id: "job_1", status: "completed", generation_id: "gen_1", model: "local/test-pattern", unsigned_urls: ["https://x/videos/job_1/content?index=0"], usage: { cost: 0.05, is_byok: false } },
        at,
      ),
    ).toEqual({
      type: "video.generation.completed",
      created_at: 1735787045,
      data: {
        id: "job_1",
        status: "completed",
        generation_id: "gen_1",
        model: "local/test-pattern",
        unsigned_urls: ["https://x/videos/job_1/content?index=0"],
        usage: { cost: 0.05, is_byok: false },
      },
    });
    expect(createVideoWebhookEvent({ id: "job_2", status: "expired", model: "m" }, at)).toEqual({
      type: "video.generation.expired",
      created_at: 1735787045,
      data: { id: "job_2", status: "expired", model: "m", error: "The video generation expired before it completed." },
    });
    expect(createVideoWebhookEvent({ id: "job_3", status: "failed", model: "m", error: "Blocked." }, at).data).toEqual({ id: "job_3", status: "failed", model: "m", error: "Blocked." });
    expect(videoWebhookIdempotencyKey({ id: "job_3", status: "cancelled" })).toBe("job_3-cancelled");
  });
});
