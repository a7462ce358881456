import { request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import { isIP, type LookupFunction } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { rootCertificates } from "node:tls";
import { hostOf, OutboundUrlError, parseOutboundUrl, resolveAllowedAddresses, type HostResolver, type OutboundUrlRefusal } from "./outbound-url.js";
import { signWebhookBody, webhookSignatureHeader } from "./webhook-signature.js";

/**
 * Header carrying the delivery's idempotency key (`<job_id>-<status>` for
 * video). The IETF draft's name, also Stripe's; identical on every retry.
 */
export const idempotencyKeyHeader = "Idempotency-Key";

/** Options for {@link createWebhookSender}; read once from the operator's configuration. */
export interface WebhookSenderOptions {
  /** Operator switch: deliver to private, loopback, link-local and other internal addresses. */
  allowPrivate?: boolean;
  /** Attempts per delivery, the first included. Default 5. */
  maxAttempts?: number;
  /** Pause before the second attempt; doubled each time (±20 % jitter). Default 1000 ms. */
  baseDelayMs?: number;
  /** Longest pause between attempts, also the cap on a receiver's Retry-After. Default 60 s. */
  maxDelayMs?: number;
  /** Budget of one attempt: connect, TLS, response head and draining. Default 10 s. */
  timeoutMs?: number;
  /** Extra trust anchors (PEM), added to Node's root certificates: a private PKI, or a test's self-signed CA. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Default: the system resolver. Injectable so tests can play a rebinding DNS. */
  resolveHost?: HostResolver;
  userAgent?: string;
}

/** One HTTP attempt, reported as it ends so the caller can record the delivery. */
export interface WebhookAttempt {
  /** 1-based. */
  attempt: number;
  /** HTTP status, when the receiver answered. */
  status?: number;
  /** Why the attempt failed, when it did without a 2xx. */
  error?: string;
  durationMs: number;
  willRetry: boolean;
}

/** One webhook to deliver. */
export interface WebhookDelivery {
  url: string;
  /** JSON body, serialised once so every attempt sends (and signs) the same bytes. */
  body: unknown;
  idempotencyKey: string;
  /** The workspace's signing secret; without it no signature header is sent. */
  signingSecret?: string;
  signal?: AbortSignal;
  /** Awaited after each attempt; a throw ends the delivery with that error. */
  onAttempt?: (attempt: WebhookAttempt) => void | Promise<void>;
}

/**
 * How a delivery ended: `delivered` (2xx); `rejected` (a status that retrying
 * will not change: 4xx other than 429, or a redirect, which is not followed);
 * `refused` (the destination is not allowed, nothing was sent); `exhausted`
 * (every attempt failed transiently); `aborted` (signal or sender closed).
 */
export type WebhookDeliveryOutcome = "delivered" | "rejected" | "refused" | "exhausted" | "aborted";

/** Result of {@link WebhookSender.deliver}; delivering never throws for network or receiver failures. */
export interface WebhookDeliveryResult {
  outcome: WebhookDeliveryOutcome;
  attempts: number;
  /** Last HTTP status received. */
  status?: number;
  /** Last error, when not delivered. */
  error?: string;
  /** Set when `outcome` is `refused`. */
  refusal?: OutboundUrlRefusal;
}

/** Sends webhooks; one per server, shared by every job. */
export interface WebhookSender {
  deliver(delivery: WebhookDelivery): Promise<WebhookDeliveryResult>;
  /** Aborts deliveries in flight or waiting to retry. */
  close(): void;
}

/** What an attempt learnt: a status, or a failure and whether another try could help. */
type AttemptOutcome =
  | { status: number; retryAfterMs?: number }
  | { error: string; retryable: boolean; refusal?: OutboundUrlRefusal };

/** Response bytes read (and dropped) before the connection is closed. */
const maxResponseBytes = 64 * 1024;

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  if (typeof header !== "string") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Resolves once the response has been read up to the limit, then lets the connection go. */
function drain(response: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let received = 0;
    response.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxResponseBytes) response.destroy();
    });
    response.on("close", resolve);
    response.on("error", () => undefined);
  });
}

/**
 * A DNS lookup for the socket that answers only with addresses that passed
 * the policy: the connection goes to exactly the address that was checked,
 * so a host that resolves differently on the second query (DNS rebinding)
 * gains nothing.
 */
function checkedLookup(options: { allowPrivate?: boolean; resolveHost?: HostResolver }, onRefusal: (error: OutboundUrlError) => void): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveAllowedAddresses(hostname, options).then(
      (addresses) => {
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : undefined;
        const usable = family ? addresses.filter((entry) => entry.family === family) : addresses;
        if (usable.length === 0) {
          callback(Object.assign(new Error(`No IPv${family} address for ${hostname}`), { code: "ENOTFOUND" }), "", 0);
        } else if (lookupOptions.all) {
          callback(null, usable);
        } else {
          callback(null, usable[0].address, usable[0].family);
        }
      },
      (error: unknown) => {
        if (error instanceof OutboundUrlError && error.reason === "forbidden_address") onRefusal(error);
        callback(error as NodeJS.ErrnoException, "", 0);
      },
    );
  };
}

/**
 * Creates the webhook sender: HTTPS only, internal destinations refused
 * (checked on the resolved address, at connect time), signed and
 * idempotency-keyed bodies, exponential backoff on network errors, 5xx and
 * 429, every attempt reported through `onAttempt`.
 */
export function createWebhookSender(options: WebhookSenderOptions = {}): WebhookSender {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5);
  const baseDelayMs = options.baseDelayMs ?? 1000;
  const maxDelayMs = options.maxDelayMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const userAgent = options.userAgent ?? "Switchboard-Webhooks/1.0";
  const extraCa = options.ca === undefined ? [] : Array.isArray(options.ca) ? options.ca : [options.ca];
  const ca = extraCa.length > 0 ? [...rootCertificates, ...extraCa] : undefined;
  const closing = new AbortController();

  async function attemptOnce(url: URL, rawBody: string, headers: Record<string, string>, signal: AbortSignal): Promise<AttemptOutcome> {
    const host = hostOf(url);
    let refusal: OutboundUrlError | undefined;
    try {
      if (isIP(host) !== 0) await resolveAllowedAddresses(host, options);
    } catch (error) {
      return { error: (error as Error).message, retryable: false, refusal: (error as OutboundUrlError).reason };
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const attemptSignal = AbortSignal.any([signal, timeout]);
    return await new Promise<AttemptOutcome>((resolve) => {
      const request = httpsRequest({
        hostname: host,
        port: url.port || 443,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers,
        agent: false,
        ca,
        lookup: checkedLookup(options, (error) => (refusal = error)),
        signal: attemptSignal,
      });
      request.on("response", (response) => {
        drain(response).then(() => resolve({ status: response.statusCode ?? 0, retryAfterMs: retryAfterMs(response.headers["retry-after"]) }));
      });
      request.on("error", (error) => {
        if (refusal) resolve({ error: refusal.message, retryable: false, refusal: refusal.reason });
        else if (timeout.aborted && !signal.aborted) resolve({ error: `No answer within ${timeoutMs} ms.`, retryable: true });
        else resolve({ error: error.message, retryable: !signal.aborted });
      });
      request.end(rawBody);
    });
  }

  function backoff(attempt: number, retryAfter: number | undefined): number {
    const exponential = baseDelayMs * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4);
    return Math.min(maxDelayMs, Math.max(exponential, retryAfter ?? 0));
  }

  return {
    async deliver(delivery) {
      let url: URL;
      try {
        url = parseOutboundUrl(delivery.url);
      } catch (error) {
        const refused = error as OutboundUrlError;
        return { outcome: "refused", attempts: 0, error: refused.message, refusal: refused.reason };
      }
      const signal = delivery.signal ? AbortSignal.any([delivery.signal, closing.signal]) : closing.signal;
      const rawBody = JSON.stringify(delivery.body);
      let last: WebhookDeliveryResult = { outcome: "aborted", attempts: 0, error: "The delivery was aborted." };
      for (let attempt = 1; attempt <= maxAttempts && !signal.aborted; attempt++) {
        const headers: Record<string, string> = {
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(rawBody)),
          "user-agent": userAgent,
          [idempotencyKeyHeader]: delivery.idempotencyKey,
          ...(delivery.signingSecret && { [webhookSignatureHeader]: signWebhookBody(delivery.signingSecret, rawBody, Math.floor(Date.now() / 1000)) }),
        };
        const started = performance.now();
        const outcome = await attemptOnce(url, rawBody, headers, signal);
        const durationMs = Math.round(performance.now() - started);
        const status = "status" in outcome ? outcome.status : undefined;
        const delivered = status !== undefined && status >= 200 && status < 300;
        const retryable = "status" in outcome ? status === 429 || (status ?? 0) >= 500 : outcome.retryable;
        const willRetry = !delivered && retryable && attempt < maxAttempts && !signal.aborted;
        const error = delivered ? undefined : "error" in outcome ? outcome.error : `HTTP ${status}`;
        await delivery.onAttempt?.({ attempt, ...(status !== undefined && { status }), ...(error !== undefined && { error }), durationMs, willRetry });
        if (delivered) return { outcome: "delivered", attempts: attempt, status };
        const refusal = "refusal" in outcome ? outcome.refusal : undefined;
        last = {
          outcome: refusal ? "refused" : signal.aborted ? "aborted" : retryable ? "exhausted" : "rejected",
          attempts: attempt,
          ...(status !== undefined && { status }),
          error,
          ...(refusal && { refusal }),
        };
        if (!willRetry) return last;
        try {
          await sleep(backoff(attempt, "status" in outcome ? outcome.retryAfterMs : undefined), undefined, { signal });
        } catch {
          return { ...last, outcome: "aborted" };
        }
      }
      return last;
    },
    close() {
      closing.abort();
    },
  };
}
