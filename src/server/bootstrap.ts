import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { takeAdvisoryLock } from "../store/advisory-locks.js";
import { createApiKeys } from "../store/api-keys.js";
import { createInterns } from "../store/interns.js";
import { createMembers } from "../store/members.js";
import { createOrganizations } from "../store/organizations.js";
import type { Queryable } from "../store/database.js";
import type { Store } from "../store/store.js";

/** The development tenant created on first start, shown to the operator once. */
export interface BootstrapTenant {
  organization_id: string;
  member_id: string;
  api_key: string;
  management_key: string;
  /** The `demo` intern, made only on the embedded store, whose in-process host serves it. */
  intern_id?: string;
}

/** Where the bootstrap tenant is written (mode 0600). */
export function bootstrapPath(dataDir: string): string {
  return join(dataDir, "bootstrap.json");
}

/** The id of the demo intern served by the in-process host. */
export const demoInternId = "demo";

/** Whether the store has never been set up (no organization at all). */
export async function isEmptyStore(db: Queryable): Promise<boolean> {
  return (await db.query("SELECT 1 FROM organizations LIMIT 1")).length === 0;
}

/**
 * Creates a development tenant: an organization in the interns programme
 * with credits, an admin member, a standard and a management key, and, with
 * `demoIntern`, the `demo` intern (its host endpoint is filled in when the
 * embedded host starts). Without an embedded host (PostgreSQL) nothing could
 * ever serve it, and as interns cannot be re-registered it would stand in the
 * way of the operator's own `demo`.
 *
 * The rows are one transaction and bootstrap.json is in place before it
 * commits: a crash at any point leaves either the whole tenant with its file
 * or an empty store, which the next start bootstraps afresh (overwriting a
 * file whose keys never committed). Without that, a crash between the rows
 * and the file would lose the key secrets (stored hashed) for good.
 * Undefined, and nothing written, when the store is not empty (set up
 * before, or by another process starting at the same time).
 */
export async function bootstrapTenant(store: Store, dataDir: string, options: { demoIntern: boolean }): Promise<BootstrapTenant | undefined> {
  return store.db.transaction(async (tx) => {
    // Replicas started together with --bootstrap: one creates the tenant, the others find it there.
    await takeAdvisoryLock(tx, "bootstrap");
    if (!(await isEmptyStore(tx))) return undefined;
    const organizations = createOrganizations(tx);
    const apiKeys = createApiKeys(tx);
    const orgId = await organizations.create("Development");
    const memberId = await createMembers(tx).add({ orgId, email: "admin@example.com", firstName: "Dev", lastName: "Admin", role: "org:admin" });
    const key = await apiKeys.create({ orgId, memberId, management: false, grant: false });
    const managementKey = await apiKeys.create({ orgId, memberId, management: true, grant: false });
    await organizations.setProgramme(orgId, true);
    await organizations.setCredits(orgId, 10);
    if (options.demoIntern) await createInterns(tx, store.secrets).add({ orgId, id: demoInternId, endpoint: "http://127.0.0.1:0", hostToken: "unset", state: "running" });
    const tenant: BootstrapTenant = {
      organization_id: orgId,
      member_id: memberId,
      api_key: key.secret,
      management_key: managementKey.secret,
      intern_id: options.demoIntern ? demoInternId : undefined,
    };
    writeFileAtomically(bootstrapPath(dataDir), JSON.stringify(tenant, null, 2) + "\n");
    return tenant;
  });
}

/** Replaces `path` whole and durably (a reader or a crash never sees half of it), mode 0600. */
function writeFileAtomically(path: string, content: string): void {
  const dir = dirname(path);
  // On PostgreSQL nothing else has created DATA_DIR yet.
  mkdirSync(dir, { recursive: true });
  const temp = join(dir, `.${process.pid}.${basename(path)}`);
  try {
    writeFileSync(temp, content, { mode: 0o600, flush: true });
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  // The rename itself must reach the disk before the transaction commits.
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Directories cannot be opened or synced on some platforms (Windows).
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
