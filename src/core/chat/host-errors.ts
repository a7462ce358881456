import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "../../gen/switchboard/v1/error_pb.js";
import { catalogueError } from "../error-catalogue.js";

// Reasons an intern host may give that mean the same to the caller. Anything
// else (the host refusing our token, a host bug) is the intern rejecting us:
// a host's 401 must never read as the caller's key being wrong.
const callerFacingReasons = new Set([
  "bad_request",
  "not_found",
  "interaction_unknown",
  "interaction_not_pending",
  "busy",
  "attachment_failed",
  "run_ended",
  "turn_failed",
  "intern_rejected",
  "stream_severed",
  "timeout",
]);

const networkFailures = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "EAI_AGAIN", "EPIPE"]);

function networkCode(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code && networkFailures.has(code)) return code;
  }
  return undefined;
}

function callerFacingError(connectError: ConnectError): ConnectError | undefined {
  const detail = connectError.findDetails(ErrorDetailSchema)[0];
  if (!detail || !callerFacingReasons.has(detail.reason)) return undefined;
  return new ConnectError(connectError.rawMessage, connectError.code, undefined, [{ desc: ErrorDetailSchema, value: detail }]);
}

/**
 * The in-stream error for a host stream that broke after the turn started:
 * the host's own reason when it gave one, else `stream_severed` (the link was
 * lost without the intern confirming an ending).
 */
export function hostStreamBreakToCallerError(error: unknown): ConnectError {
  return callerFacingError(ConnectError.from(error)) ?? catalogueError("stream_severed", undefined, { cause: error });
}

/**
 * Translates an error from an intern host call into the caller's error:
 * the host's own catalogue reasons pass through (rebuilt, so none of the
 * host's headers leak); transport failures become `intern_unreachable`.
 */
export function hostErrorToCallerError(error: unknown): ConnectError {
  const connectError = ConnectError.from(error);
  const passed = callerFacingError(connectError);
  if (passed) return passed;
  const detail = connectError.findDetails(ErrorDetailSchema)[0];
  if (!detail && (connectError.code === Code.Unavailable || networkCode(error))) {
    return catalogueError("intern_unreachable", undefined, { cause: error });
  }
  if (!detail && connectError.code === Code.DeadlineExceeded) return catalogueError("timeout", undefined, { cause: error });
  return catalogueError("intern_rejected", undefined, { cause: error });
}
