import type { ConnectRouter } from "@connectrpc/connect";
import { InternChatService } from "../gen/switchboard/v1/chat_pb.js";
import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import type { Store } from "../store/store.js";
import { createAdminService } from "./admin-service.js";
import type { KeyCache } from "./key-cache.js";
import { createOrganizationService } from "./organization-service.js";
import { createInternChatService, type InternChatServiceOptions } from "./chat/intern-chat-service.js";

/** What the core services are built from. */
export interface CoreDependencies {
  store: Store;
  keys: KeyCache;
  chat: Omit<InternChatServiceOptions, "store">;
  /** Further services (chat, speech, video), registered after the base ones. */
  extraRoutes?: readonly ((router: ConnectRouter) => void)[];
}

/** Registers every core service on a Connect router. */
export function createCoreRoutes(deps: CoreDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(OrganizationService, createOrganizationService(deps.store));
    router.service(AdminService, createAdminService(deps.store, deps.keys));
    router.service(InternChatService, createInternChatService({ ...deps.chat, store: deps.store }));
    for (const register of deps.extraRoutes ?? []) register(router);
  };
}
