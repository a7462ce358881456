import type { Interceptor } from "@connectrpc/connect";
import { hashKeyBase64 } from "../store/api-keys.js";
import { accessPolicies } from "./access-policy.js";
import { bearerToken, secretsEqual } from "./bearer-token.js";
import { callerKey } from "./caller.js";
import { catalogueError } from "./error-catalogue.js";
import type { KeyCache } from "./key-cache.js";

/** Options for {@link createAuthInterceptor}. */
export interface AuthInterceptorOptions {
  keys: KeyCache;
  /** The platform admin token, for AdminService. */
  adminToken: string;
}

/**
 * Authenticates and authorizes every call before its handler runs, so HTTP
 * (through the bridge) and gRPC callers meet the same decisions. Sets
 * {@link callerKey} for handlers.
 */
export function createAuthInterceptor(options: AuthInterceptorOptions): Interceptor {
  return (next) => async (req) => {
    const policy = accessPolicies.get(req.service.typeName);
    if (!policy) throw catalogueError("not_found", `Unknown service ${req.service.typeName}.`);
    if (policy.credential === "public") return next(req);
    const token = bearerToken(req.header.get("authorization"));
    if (policy.credential === "admin") {
      if (!token || !secretsEqual(token, options.adminToken)) throw catalogueError(policy.unauthenticated, "The admin token is invalid or missing.");
      return next(req);
    }
    const caller = token ? await options.keys.get(hashKeyBase64(token)) : undefined;
    if (!caller) throw catalogueError(policy.unauthenticated);
    if (policy.programme && !caller.inProgramme) throw catalogueError("programme_required");
    if (policy.departedCreator && caller.creatorLeft && !caller.hasGrant) throw catalogueError("creator_departed");
    if (policy.keyKind === "management" && caller.kind !== "management") throw catalogueError("management_key_required");
    if (policy.keyKind === "standard" && caller.kind !== "standard") throw catalogueError("management_key_forbidden");
    req.contextValues.set(callerKey, caller);
    return next(req);
  };
}
