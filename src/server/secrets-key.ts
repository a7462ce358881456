import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { readOrCreateSecretFile } from "./secret-file.js";

const keyBytes = 32;

/**
 * Reads a secrets key written as 64 hex characters or as base64/base64url of
 * 32 bytes; anything else is refused naming `source` (the variable or file),
 * never echoing the value, which may be a real key with a typo.
 */
export function parseSecretsKey(raw: string, source: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, "hex");
  // 32 bytes are 43 base64 characters, and one '=' of padding when written in full.
  if (/^[A-Za-z0-9+/]{43}=?$/.test(raw) || /^[A-Za-z0-9_-]{43}=?$/.test(raw)) {
    const key = Buffer.from(raw, raw.includes("+") || raw.includes("/") ? "base64" : "base64url");
    if (key.length === keyBytes) return key;
  }
  throw new Error(`${source} must be ${keyBytes} bytes written as 64 hex characters or in base64 (43 or 44 characters), got ${raw.length} characters.`);
}

/** Where the embedded store's generated secrets key is kept. */
export function secretsKeyPath(dataDir: string): string {
  return join(dataDir, "secrets-key");
}

/**
 * The key stored secrets are sealed with: `SECRETS_KEY` when set; else, on the
 * embedded store, the one generated on first start into
 * `DATA_DIR/secrets-key` (mode 0600); else (PostgreSQL) none, as a key
 * generated per replica would not open the secrets another one sealed.
 */
export function resolveSecretsKey(configured: Buffer | undefined, options: { dataDir: string; embedded: boolean }): Buffer | undefined {
  if (configured) return configured;
  if (!options.embedded) return undefined;
  const path = secretsKeyPath(options.dataDir);
  const written = readOrCreateSecretFile(path, {
    generate: () => randomBytes(keyBytes).toString("hex"),
    noun: "key",
    // A new key would not open the secrets already sealed with the lost one.
    ifEmpty: "restore it from a backup of DATA_DIR, or set SECRETS_KEY to the key it held.",
  });
  return parseSecretsKey(written, path);
}
