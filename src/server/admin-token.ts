import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
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
  const existing = readToken(path);
  if (existing) return existing;
  mkdirSync(dataDir, { recursive: true });
  const token = `sb-admin-${randomBytes(32).toString("base64url")}`;
  // Written whole under a name of its own, then linked into place: the link
  // fails if another process sharing DATA_DIR got there first (its token
  // wins), and a crash never leaves an empty or partial token file.
  const draft = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(draft, token + "\n", { mode: 0o600, flag: "wx" });
  try {
    linkSync(draft, path);
    return token;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const winner = readToken(path);
    if (!winner) throw new Error(`${path} exists but holds no token; delete it or set ADMIN_TOKEN.`);
    return winner;
  } finally {
    unlinkSync(draft);
  }
}

function readToken(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return undefined;
  }
}
