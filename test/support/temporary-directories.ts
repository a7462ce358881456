import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Temporary directories a test file makes, removed together when its cleanup says so. */
export interface TemporaryDirectories {
  /** A fresh empty directory under the OS's temporary directory. */
  make(): string;
  /** Removes every directory made since the last call; call it from `afterEach`, after whatever still writes there has stopped. */
  removeAll(): void;
}

/**
 * The temporary-directory fixture the server tests share: each test makes
 * what it needs, and the file's `afterEach` removes them, so a failed
 * assertion leaves nothing behind.
 */
export function temporaryDirectories(prefix: string): TemporaryDirectories {
  const made: string[] = [];
  return {
    make() {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    removeAll() {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}
