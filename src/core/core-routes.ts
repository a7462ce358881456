import type { ConnectRouter } from "@connectrpc/connect";
import type { Tracer } from "@opentelemetry/api";
import { InternChatService } from "../gen/switchboard/v1/chat_pb.js";
import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import { SpeechService } from "../gen/switchboard/v1/speech_pb.js";
import { VideoService } from "../gen/switchboard/v1/video_pb.js";
import type { Store } from "../store/store.js";
import { createAdminService } from "./admin-service.js";
import type { InternDirectory } from "./chat/intern-directory.js";
import type { MemberDirectory } from "./member-directory.js";
import { createOrganizationService } from "./organization-service.js";
import { createInternChatService, type InternChatServiceOptions } from "./chat/intern-chat-service.js";
import { speechLimits } from "./speech/speech-limits.js";
import { createSpeechService, type SpeechServiceOptions } from "./speech/speech-service.js";
import { videoLimits } from "./video/video-limits.js";
import { createVideoService, type VideoServiceOptions } from "./video/video-service.js";

/** What the core services are built from. */
export interface CoreDependencies {
  store: Store;
  /** Where chat turns find their interns. */
  interns: InternDirectory;
  /** Where member listing finds its pages. */
  members: MemberDirectory;
  /** Spans of the services' own work (host calls, syntheses, video jobs); a no-op tracer when tracing is off. */
  tracer: Tracer;
  chat: Omit<InternChatServiceOptions, "interns" | "tracer">;
  /** SpeechService; absent, the service is not served. */
  speech?: Omit<SpeechServiceOptions, "store" | "tracer">;
  /** VideoService; absent, the service is not served. */
  video?: Omit<VideoServiceOptions, "store" | "tracer">;
  /** Default webhook destinations may be private addresses (`WEBHOOK_ALLOW_PRIVATE`). */
  webhookAllowPrivate?: boolean;
  /** Further services (chat, speech, video), registered after the base ones. */
  extraRoutes?: readonly ((router: ConnectRouter) => void)[];
}

/** Registers every core service on a Connect router. */
export function createCoreRoutes(deps: CoreDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(OrganizationService, createOrganizationService(deps.members));
    router.service(AdminService, createAdminService(deps.store, { webhookAllowPrivate: deps.webhookAllowPrivate }));
    router.service(InternChatService, createInternChatService({ ...deps.chat, interns: deps.interns, tracer: deps.tracer }));
    // Cloning references make speech requests larger than any other message: they get a read limit of their own.
    if (deps.speech) router.service(SpeechService, createSpeechService({ ...deps.speech, store: deps.store, tracer: deps.tracer }), { readMaxBytes: speechLimits.bodyBytes + 64 * 1024 });
    // Frame images as data URIs make video requests larger than the surface's 1 MiB too.
    if (deps.video) router.service(VideoService, createVideoService({ ...deps.video, store: deps.store, tracer: deps.tracer }), { readMaxBytes: videoLimits.bodyBytes + 64 * 1024 });
    for (const register of deps.extraRoutes ?? []) register(router);
  };
}
