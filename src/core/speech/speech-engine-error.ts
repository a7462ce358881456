import { ConnectError } from "@connectrpc/connect";
import { SpeechProviderError, type SpeechProviderErrorKind } from "../../providers/speech/index.js";
import { catalogueError, type ErrorName } from "../error-catalogue.js";

const catalogueNameOfKind: Record<SpeechProviderErrorKind, ErrorName> = {
  bad_request: "bad_request",
  provider_error: "provider_error",
  unavailable: "service_unavailable",
  timeout: "provider_timeout",
  overloaded: "provider_overloaded",
};

/**
 * The caller's error for a failed synthesis: an engine's kind becomes its
 * catalogue entry (400, 502, 503, 524, 529) with the engine's message, which
 * engines keep safe to show; a caller who left gets 499; anything else is a
 * bare 500 that reveals nothing.
 */
export function speechEngineError(error: unknown, signal: AbortSignal): ConnectError {
  if (error instanceof SpeechProviderError) return catalogueError(catalogueNameOfKind[error.kind], error.message, { cause: error });
  if (error instanceof ConnectError) return error;
  if (signal.aborted) return catalogueError("client_closed_request", undefined, { cause: error });
  return catalogueError("internal", undefined, { cause: error });
}
