import type { PublicError } from "../core/error-catalogue.js";

/** The spec's JSON error body: `{error:{code,message,metadata?}}`. */
export interface ErrorEnvelope {
  error: { code: number; message: string; metadata?: { reason: string; retryable: boolean } };
}

/** Renders a public error as the envelope (metadata only when it has a reason). */
export function errorEnvelope(error: PublicError): ErrorEnvelope {
  return {
    error: {
      code: error.status,
      message: error.message,
      ...(error.reason ? { metadata: { reason: error.reason, retryable: error.retryable } } : {}),
    },
  };
}

/** Headers that tell clients whether and when to retry (DESIGN §4). */
export function retryHeaders(error: PublicError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error.retryAfterSeconds > 0) headers["retry-after"] = String(error.retryAfterSeconds);
  if (!error.retryable) headers["x-should-retry"] = "false";
  return headers;
}
