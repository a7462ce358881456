import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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
  const path = adminTokenPath(dataDir);
  try {
    return readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const token = `sb-admin-${randomBytes(32).toString("base64url")}`;
  writeFileSync(path, token + "\n", { mode: 0o600, flag: "wx" });
  return token;
}
