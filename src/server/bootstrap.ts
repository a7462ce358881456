import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Store } from "../store/store.js";

/** The development tenant created on first start, shown to the operator once. */
export interface BootstrapTenant {
  organization_id: string;
  member_id: string;
  api_key: string;
  management_key: string;
  intern_id: string;
}

/** Where the bootstrap tenant is written (mode 0600). */
export function bootstrapPath(dataDir: string): string {
  return join(dataDir, "bootstrap.json");
}

/** The id of the demo intern served by the in-process host. */
export const demoInternId = "demo";

/** Whether the store has never been set up (no organization at all). */
export async function isEmptyStore(store: Store): Promise<boolean> {
  return (await store.db.query("SELECT 1 FROM organizations LIMIT 1")).length === 0;
}

/**
 * Creates a development tenant: an organization in the interns programme
 * with credits, an admin member, a standard and a management key, and the
 * `demo` intern (its host endpoint is filled in when the host starts).
 */
export async function bootstrapTenant(store: Store, dataDir: string): Promise<BootstrapTenant> {
  const orgId = await store.organizations.create("Development");
  const memberId = await store.members.add({ orgId, email: "admin@example.com", firstName: "Dev", lastName: "Admin", role: "org:admin" });
  const key = await store.apiKeys.create({ orgId, memberId, management: false, grant: false });
  const managementKey = await store.apiKeys.create({ orgId, memberId, management: true, grant: false });
  await store.organizations.setProgramme(orgId, true);
  await store.organizations.setCredits(orgId, 10);
  await store.interns.add({ orgId, id: demoInternId, endpoint: "http://127.0.0.1:0", hostToken: "unset", state: "running" });
  const tenant: BootstrapTenant = {
    organization_id: orgId,
    member_id: memberId,
    api_key: key.secret,
    management_key: managementKey.secret,
    intern_id: demoInternId,
  };
  // On PostgreSQL nothing else has created DATA_DIR yet.
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(bootstrapPath(dataDir), JSON.stringify(tenant, null, 2) + "\n", { mode: 0o600 });
  return tenant;
}
