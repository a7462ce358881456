import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { InternChatService } from "../gen/switchboard/v1/chat_pb.js";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import { SpeechService } from "../gen/switchboard/v1/speech_pb.js";
import { VideoService } from "../gen/switchboard/v1/video_pb.js";
import type { ErrorName } from "./error-catalogue.js";

/** Who may call a service, and how refusals read. */
export interface AccessPolicy {
  /** `key`: an API key; `admin`: the platform admin token; `public`: anyone. */
  credential: "key" | "admin" | "public";
  /** Catalogue entry for a missing or invalid credential. */
  unauthenticated: ErrorName;
  /** Management keys only, standard keys only, or either. */
  keyKind?: "management" | "standard";
  /** Callers outside the interns programme get a bare 404. */
  programme?: boolean;
  /** Keys whose creator left without a grant get 403. */
  departedCreator?: boolean;
}

/**
 * Access rules per service, in one place: the spec's auth section as data.
 * A service missing here is refused, so a new service cannot ship open.
 */
export const accessPolicies: ReadonlyMap<string, AccessPolicy> = new Map<string, AccessPolicy>([
  [InternChatService.typeName, { credential: "key", unauthenticated: "unauthenticated_chat", programme: true, departedCreator: true }],
  [OrganizationService.typeName, { credential: "key", unauthenticated: "unauthenticated", keyKind: "management" }],
  [SpeechService.typeName, { credential: "key", unauthenticated: "unauthenticated", keyKind: "standard" }],
  [VideoService.typeName, { credential: "key", unauthenticated: "unauthenticated", keyKind: "standard" }],
  [AdminService.typeName, { credential: "admin", unauthenticated: "unauthenticated" }],
  ["grpc.health.v1.Health", { credential: "public", unauthenticated: "unauthenticated" }],
  ["grpc.reflection.v1.ServerReflection", { credential: "public", unauthenticated: "unauthenticated" }],
]);
