import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";

/** Thrown when another live process holds the data directory. */
export class DataDirLockedError extends Error {
  constructor(dir: string, pid: number) {
    super(`The data directory ${dir} is in use by process ${pid}. The embedded store belongs to one process: stop it, or set DATABASE_URL to share PostgreSQL between replicas.`);
    this.name = "DataDirLockedError";
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes the data directory for this process, because two processes writing
 * one PGlite directory silently lose writes. A lock left by a dead process is
 * taken over. Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "switchboard.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number.parseInt(readFileSync(path, "utf8"), 10);
      if (Number.isInteger(holder) && isAlive(holder)) throw new DataDirLockedError(dir, holder);
      rmSync(path, { force: true });
    }
  }
  throw new Error(`Could not lock the data directory ${dir}.`);
}
