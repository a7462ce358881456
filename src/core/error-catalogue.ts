import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorDetailSchema } from "../gen/switchboard/v1/error_pb.js";

/** One row of the catalogue: how an error looks on every surface. */
export interface CatalogueEntry {
  /** HTTP status on the JSON surface, and the in-stream `code`. */
  readonly status: number;
  /** gRPC/Connect code for internal callers. */
  readonly grpc: Code;
  /** Public `metadata.reason`; empty for refusals the spec sends bare. */
  readonly reason: string;
  /** Default message; call sites may give a more precise one. */
  readonly message: string;
  /** Whether the same request can succeed later. */
  readonly retryable: boolean;
  /** Default Retry-After, in seconds, for refusals that clear by themselves. */
  readonly retryAfterSeconds?: number;
}

/**
 * The one error catalogue: every refusal Switchboard makes, keyed by a stable
 * internal name. Nothing else in the code base chooses an HTTP status or gRPC
 * code; several names may share a public reason with different statuses (the
 * spec's `attachment_failed` is 409 or 410, `busy` is 409 or 503).
 */
export const errorCatalogue = {
  bad_request: { status: 400, grpc: Code.InvalidArgument, reason: "bad_request", message: "Invalid request.", retryable: false },
  unauthenticated_chat: { status: 401, grpc: Code.Unauthenticated, reason: "", message: "The API key is invalid or missing.", retryable: false },
  unauthenticated: { status: 401, grpc: Code.Unauthenticated, reason: "", message: "The Authentication header is missing or does not hold a valid API key.", retryable: false },
  management_key_required: { status: 401, grpc: Code.Unauthenticated, reason: "management_key_required", message: "This operation requires a management key.", retryable: false },
  insufficient_credits: { status: 402, grpc: Code.FailedPrecondition, reason: "insufficient_credits", message: "Insufficient credits.", retryable: false },
  creator_departed: { status: 403, grpc: Code.PermissionDenied, reason: "", message: "The member who created this API key has left the organization and the key holds no grant.", retryable: false },
  management_key_forbidden: { status: 403, grpc: Code.PermissionDenied, reason: "forbidden", message: "This operation is restricted: management keys cannot be used for it; use a standard API key.", retryable: false },
  programme_required: { status: 404, grpc: Code.NotFound, reason: "", message: "Not found.", retryable: false },
  not_found: { status: 404, grpc: Code.NotFound, reason: "not_found", message: "Not found.", retryable: false },
  interaction_unknown: { status: 404, grpc: Code.NotFound, reason: "interaction_unknown", message: "No pending question has this tool_call_id in this session.", retryable: false },
  intern_not_ready: { status: 409, grpc: Code.FailedPrecondition, reason: "intern_not_ready", message: "The intern is not running.", retryable: true },
  session_busy: { status: 409, grpc: Code.Aborted, reason: "busy", message: "Another turn is running in this session.", retryable: true, retryAfterSeconds: 1 },
  interaction_not_pending: { status: 409, grpc: Code.FailedPrecondition, reason: "interaction_not_pending", message: "The question is no longer waiting for an answer.", retryable: false },
  attachment_conflict: { status: 409, grpc: Code.Aborted, reason: "attachment_failed", message: "Another request is already attached to the run.", retryable: true },
  attachment_expired: { status: 410, grpc: Code.FailedPrecondition, reason: "attachment_failed", message: "The run produced more output than the intern retains, so the paused stream cannot be resumed.", retryable: false },
  run_ended: { status: 410, grpc: Code.Aborted, reason: "run_ended", message: "The run ended.", retryable: false },
  request_timeout: { status: 408, grpc: Code.DeadlineExceeded, reason: "request_timeout", message: "The request was not received in time.", retryable: true },
  payload_too_large: { status: 413, grpc: Code.ResourceExhausted, reason: "payload_too_large", message: "Request body exceeds 1 MiB (1048576 bytes).", retryable: false },
  headers_too_large: { status: 431, grpc: Code.ResourceExhausted, reason: "headers_too_large", message: "The request headers are too large.", retryable: false },
  rate_limited: { status: 429, grpc: Code.ResourceExhausted, reason: "rate_limited", message: "Rate limit exceeded.", retryable: true },
  client_closed_request: { status: 499, grpc: Code.Canceled, reason: "client_closed_request", message: "The client closed the request.", retryable: false },
  internal: { status: 500, grpc: Code.Internal, reason: "internal", message: "Internal server error.", retryable: true },
  intern_unreachable: { status: 502, grpc: Code.Unavailable, reason: "intern_unreachable", message: "The intern could not be reached.", retryable: true },
  intern_rejected: { status: 502, grpc: Code.Unavailable, reason: "intern_rejected", message: "The intern rejected the request.", retryable: false },
  turn_failed: { status: 502, grpc: Code.Unavailable, reason: "turn_failed", message: "The intern failed the turn.", retryable: true },
  stream_severed: { status: 502, grpc: Code.Unavailable, reason: "stream_severed", message: "The connection to the intern was lost.", retryable: true },
  provider_error: { status: 502, grpc: Code.Unavailable, reason: "provider_error", message: "The provider returned an error.", retryable: true },
  host_busy: { status: 503, grpc: Code.Unavailable, reason: "busy", message: "The intern cannot hold another run open across a question now; retry later.", retryable: true, retryAfterSeconds: 5 },
  service_unavailable: { status: 503, grpc: Code.Unavailable, reason: "service_unavailable", message: "Service temporarily unavailable.", retryable: true },
  timeout: { status: 504, grpc: Code.DeadlineExceeded, reason: "timeout", message: "The intern did not answer within the request budget.", retryable: true },
  provider_timeout: { status: 524, grpc: Code.DeadlineExceeded, reason: "timeout", message: "The request to the provider timed out.", retryable: true },
  provider_overloaded: { status: 529, grpc: Code.Unavailable, reason: "provider_overloaded", message: "The provider is overloaded.", retryable: true },
} as const satisfies Record<string, CatalogueEntry>;

/** A name from the catalogue. */
export type ErrorName = keyof typeof errorCatalogue;

/** Options for {@link catalogueError}. */
export interface CatalogueErrorOptions {
  /** Seconds until a retry may succeed (429, busy). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/**
 * Creates the ConnectError for a catalogue entry, with the detail the bridge
 * renders from. `message` overrides the entry's default text.
 */
export function catalogueError(name: ErrorName, message?: string, options: CatalogueErrorOptions = {}): ConnectError {
  const entry: CatalogueEntry = errorCatalogue[name];
  const detail = create(ErrorDetailSchema, {
    httpStatus: entry.status,
    reason: entry.reason,
    retryable: entry.retryable,
    retryAfterSeconds: options.retryAfterSeconds ?? entry.retryAfterSeconds ?? 0,
  });
  return new ConnectError(message ?? entry.message, entry.grpc, undefined, [{ desc: ErrorDetailSchema, value: detail }], options.cause);
}

/** The public face of any error, as rendered on the JSON surface. */
export interface PublicError {
  status: number;
  message: string;
  /** Empty when the envelope carries no metadata. */
  reason: string;
  retryable: boolean;
  retryAfterSeconds: number;
}

const statusOfCode: Record<Code, ErrorName> = {
  [Code.Canceled]: "client_closed_request",
  [Code.Unknown]: "internal",
  [Code.InvalidArgument]: "bad_request",
  [Code.DeadlineExceeded]: "timeout",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "bad_request",
  [Code.PermissionDenied]: "management_key_forbidden",
  // Without a detail, only the Connect runtime's read limit raises this.
  [Code.ResourceExhausted]: "payload_too_large",
  [Code.FailedPrecondition]: "bad_request",
  [Code.Aborted]: "session_busy",
  [Code.OutOfRange]: "bad_request",
  [Code.Unimplemented]: "not_found",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "service_unavailable",
  [Code.DataLoss]: "internal",
  [Code.Unauthenticated]: "unauthenticated",
};

/**
 * Reads the public status, reason and message of an error: from its detail
 * when it came from the catalogue, else from its Connect code (errors raised
 * by the Connect runtime itself). Unknown exceptions become a bare 500 that
 * reveals nothing of their text.
 */
export function describeError(error: unknown): PublicError {
  const connectError = error instanceof ConnectError ? error : undefined;
  const detail = connectError?.findDetails(ErrorDetailSchema)[0];
  if (connectError && detail) {
    return {
      status: detail.httpStatus,
      message: connectError.rawMessage,
      reason: detail.reason,
      retryable: detail.retryable,
      retryAfterSeconds: detail.retryAfterSeconds,
    };
  }
  const entry: CatalogueEntry = errorCatalogue[connectError ? statusOfCode[connectError.code] : "internal"];
  return {
    status: entry.status,
    message: connectError && connectError.code !== Code.Internal && connectError.code !== Code.Unknown ? connectError.rawMessage : entry.message,
    reason: entry.reason,
    retryable: entry.retryable,
    retryAfterSeconds: 0,
  };
}

/**
 * Whether `error` was raised outside the catalogue and outside the Connect
 * runtime's own refusals: an exception nobody meant to reach a caller (a
 * store failure, a bug). Its text stays out of responses; it belongs in the log.
 */
export function isUnexpectedError(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return true;
  return error.findDetails(ErrorDetailSchema).length === 0 && (error.code === Code.Internal || error.code === Code.Unknown);
}

/**
 * The error as a caller receives it: with the catalogue's detail, which
 * errors raised outside the catalogue (the Connect runtime's deadline, an
 * unexpected exception) lack, so every refusal on gRPC and Connect carries
 * status, reason and retryable. The code stays the runtime's; an unexpected
 * exception becomes `internal`, its text withheld.
 */
export function withCatalogueDetail(error: unknown): ConnectError {
  if (error instanceof ConnectError && error.findDetails(ErrorDetailSchema).length > 0) return error;
  const described = describeError(error);
  const detail = create(ErrorDetailSchema, {
    httpStatus: described.status,
    reason: described.reason,
    retryable: described.retryable,
    retryAfterSeconds: described.retryAfterSeconds,
  });
  const code = isUnexpectedError(error) ? Code.Internal : (error as ConnectError).code;
  return new ConnectError(described.message, code, error instanceof ConnectError ? error.metadata : undefined, [{ desc: ErrorDetailSchema, value: detail }], error);
}

/**
 * The catalogue error for a reason reported by another component (an intern
 * host's RunFailed): by catalogue name first, else by public reason.
 */
export function catalogueErrorForReason(reason: string, message?: string): ConnectError {
  if (Object.hasOwn(errorCatalogue, reason)) return catalogueError(reason as ErrorName, message || undefined);
  const name = (Object.keys(errorCatalogue) as ErrorName[]).find((key) => errorCatalogue[key].reason === reason);
  return catalogueError(name ?? "turn_failed", message || undefined);
}
