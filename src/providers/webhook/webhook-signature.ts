import { createHmac, timingSafeEqual } from "node:crypto";

/** Header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const webhookSignatureHeader = "X-Webhook-Signature";

/** Default window within which a receiver accepts a signature's timestamp, in seconds. */
export const defaultSignatureToleranceSeconds = 300;

function hmacHex(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  return createHmac("sha256", secret).update(`${timestamp},`).update(rawBody).digest("hex");
}

/**
 * Signs a webhook body: HMAC-SHA256 keyed with the workspace secret (its
 * UTF-8 bytes) over `"<t>," + raw body`. Binding the timestamp lets receivers
 * refuse replays of an old delivery.
 */
export function signWebhookBody(secret: string, rawBody: string | Uint8Array, timestampSeconds: number): string {
  return `t=${timestampSeconds},v1=${hmacHex(secret, timestampSeconds, rawBody)}`;
}

/**
 * Verifies a signature header against the raw body, for receivers (and our
 * tests): true when one `v1` matches, compared in constant time, and `t` is
 * within `toleranceSeconds` of now. Several `v1` entries are accepted so a
 * secret can be rotated.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  rawBody: string | Uint8Array,
  toleranceSeconds: number = defaultSignatureToleranceSeconds,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): boolean {
  if (!header) return false;
  const parts = header.split(",").map((part) => part.trim().split("="));
  const timestampText = parts.find(([key]) => key === "t")?.[1];
  if (!timestampText || !/^\d{1,15}$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, rawBody), "hex");
  return parts.some(([key, value]) => {
    if (key !== "v1" || !value || !/^[0-9a-f]{64}$/i.test(value)) return false;
    return timingSafeEqual(Buffer.from(value, "hex"), expected);
  });
}
