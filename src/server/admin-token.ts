import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { readOrCreateSecretFile } from "./secret-file.js";

/** Where a generated admin token is kept, for the CLI to find. */
export function adminTokenPath(dataDir: string): string {
  return join(dataDir, "admin-token");
}

/**
 * The platform admin token: `ADMIN_TOKEN` when set, else the one generated on
 * first start into `DATA_DIR/admin-token` (mode 0600).
 */
export function resolveAdminToken(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  return readOrCreateSecretFile(adminTokenPath(dataDir), {
    generate: () => `sb-admin-${randomBytes(32).toString("base64url")}`,
    noun: "token",
    ifEmpty: "delete it or set ADMIN_TOKEN.",
  });
}
