import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/**
 * A secret generated once into `path` (mode 0600) and read back on every
 * later start, for what the operator may leave unset on one machine (the
 * admin token, the secrets key). Replicas sharing the directory all get the
 * first one written.
 */
export function readOrCreateSecretFile(path: string, options: SecretFileOptions): string {
  const existing = readSecret(path, options);
  if (existing) return existing;
  mkdirSync(dirname(path), { recursive: true });
  const generated = options.generate();
  // Written whole under a name of its own, then linked into place: the link
  // fails if another process sharing the directory got there first (its
  // secret wins), and a crash never leaves an empty or partial file.
  const draft = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(draft, generated + "\n", { mode: 0o600, flag: "wx" });
  try {
    linkSync(draft, path);
    return generated;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const winner = readSecret(path, options);
    if (!winner) throw new Error(`${path} vanished while it was being written.`);
    return winner;
  } finally {
    unlinkSync(draft);
  }
}

/** What {@link readOrCreateSecretFile} makes, and what it tells the operator when the file is empty. */
export interface SecretFileOptions {
  generate(): string;
  /** What the file holds, for the error: `token`, `key`. */
  noun: string;
  /** The way out of an empty file, ending the error. */
  ifEmpty: string;
}

function readSecret(path: string, options: SecretFileOptions): string | undefined {
  let content: string;
  try {
    content = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return undefined;
  }
  const value = content.trim();
  if (!value) throw new Error(`${path} exists but holds no ${options.noun}; ${options.ifEmpty}`);
  return value;
}
