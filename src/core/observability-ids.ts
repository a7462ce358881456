import { catalogueError } from "./error-catalogue.js";
import { characterCount } from "./text-rules.js";

/** The spec's bound on the session and end-user ids of video and speech requests. */
export const observabilityIdChars = 256;

/** What a video or speech request is grouped and attributed under; never sent to a provider. */
export interface ObservabilityIds {
  sessionId?: string;
  user?: string;
}

function checkLength(value: string | undefined, name: string): void {
  if (value !== undefined && characterCount(value, observabilityIdChars) > observabilityIdChars) {
    throw catalogueError("bad_request", `${name} must be at most ${observabilityIdChars} characters.`);
  }
}

/**
 * The ids of a video or speech request, one rule for both: the body's
 * `session_id` when it holds one, else the `x-session-id` header (the body
 * wins when both are given); an empty value counts as none. Either id over
 * 256 characters is the request's 400, naming where it came from.
 */
export function observabilityIdsOf(request: { sessionId?: string; user?: string }, sessionHeader: string | null): ObservabilityIds {
  const sessionId = request.sessionId || sessionHeader || undefined;
  checkLength(sessionId, request.sessionId ? "session_id" : "The x-session-id header");
  const user = request.user || undefined;
  checkLength(user, "user");
  return { sessionId, user };
}
