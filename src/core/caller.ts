import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { KeyRecord } from "../store/api-keys.js";
import { catalogueError } from "./error-catalogue.js";

/** The authenticated API key a request acts through. */
export type Caller = KeyRecord;

/** Set by the auth interceptor for every request made with an API key. */
export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "authenticated caller" });

/**
 * The caller of a handler. The interceptor has already refused requests
 * without one, so a missing caller is a wiring bug, reported as a 401.
 */
export function callerOf(context: HandlerContext): Caller {
  const caller = context.values.get(callerKey);
  if (!caller) throw catalogueError("unauthenticated");
  return caller;
}
