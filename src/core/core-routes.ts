import type { ConnectRouter } from "@connectrpc/connect";
import { AdminService } from "../gen/switchboard/admin/v1/admin_pb.js";
import { OrganizationService } from "../gen/switchboard/v1/organization_pb.js";
import type { Store } from "../store/store.js";
import { createAdminService } from "./admin-service.js";
import type { KeyCache } from "./key-cache.js";
import { createOrganizationService } from "./organization-service.js";

/** What the core services are built from. */
export interface CoreDependencies {
  store: Store;
  keys: KeyCache;
  /** Further services (chat, speech, video), registered after the base ones. */
  extraRoutes?: readonly ((router: ConnectRouter) => void)[];
}

/** Registers every core service on a Connect router. */
export function createCoreRoutes(deps: CoreDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(OrganizationService, createOrganizationService(deps.store));
    router.service(AdminService, createAdminService(deps.store, deps.keys));
    for (const register of deps.extraRoutes ?? []) register(router);
  };
}
