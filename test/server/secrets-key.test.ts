import { randomBytes } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { resolveSecretsKey, secretsKeyPath } from "../../src/server/secrets-key.js";
import { temporaryDirectories } from "../support/temporary-directories.js";

const dirs = temporaryDirectories("switchboard-secrets-key-");
const newDir = dirs.make;
afterEach(dirs.removeAll);

describe("the secrets key when SECRETS_KEY is unset", () => {
  it("is generated once on the embedded store, mode 0600, and read back on later starts", () => {
    const dataDir = newDir();
    const key = resolveSecretsKey(undefined, { dataDir, embedded: true })!;
    expect(key).toHaveLength(32);
    expect(statSync(secretsKeyPath(dataDir)).mode & 0o777).toBe(0o600);
    expect(readFileSync(secretsKeyPath(dataDir), "utf8")).toBe(`${key.toString("hex")}\n`);
    expect(resolveSecretsKey(undefined, { dataDir, embedded: true })).toEqual(key);
  });

  it("is none on PostgreSQL, where a key per replica would not open what another sealed", () => {
    const dataDir = newDir();
    expect(resolveSecretsKey(undefined, { dataDir, embedded: false })).toBeUndefined();
    expect(() => statSync(secretsKeyPath(dataDir))).toThrow(/ENOENT/);
  });

  it("gives way to SECRETS_KEY, and refuses a key file that is empty or not a key", () => {
    const dataDir = newDir();
    const configured = randomBytes(32);
    expect(resolveSecretsKey(configured, { dataDir, embedded: true })).toBe(configured);
    writeFileSync(secretsKeyPath(dataDir), "");
    expect(() => resolveSecretsKey(undefined, { dataDir, embedded: true })).toThrow(/secrets-key exists but holds no key; restore it/);
    writeFileSync(secretsKeyPath(dataDir), "abc\n");
    expect(() => resolveSecretsKey(undefined, { dataDir, embedded: true })).toThrow(`${secretsKeyPath(dataDir)} must be 32 bytes`);
  });
});
