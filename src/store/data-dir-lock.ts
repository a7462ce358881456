import { mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Thrown when another live process holds the data directory. */
export class DataDirLockedError extends Error {
  constructor(dir: string, pid: number) {
    super(`The data directory ${dir} is in use by process ${pid}. The embedded store belongs to one process: stop it, or set DATABASE_URL to share PostgreSQL between replicas.`);
    this.name = "DataDirLockedError";
  }
}

/** Who wrote a lock file: a PID, and on Linux what tells a reused PID apart. */
interface LockHolder {
  pid: number;
  /** /proc/sys/kernel/random/boot_id: PIDs of another boot are all gone. */
  bootId?: string;
  /** Field 22 of /proc/<pid>/stat (start time in ticks since boot): differs for a reused PID. */
  startTime?: string;
}

/** Lock files this process holds (it may open several data directories). */
const held = new Set<string>();

/** A takeover guard older than this was left by a crash inside the (sub-millisecond) critical section. */
const guardStaleMs = 10_000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined; // no /proc (macOS, Windows), or hidden by hidepid
  }
}

function bootId(): string | undefined {
  return readProc("/proc/sys/kernel/random/boot_id")?.trim() || undefined;
}

function startTime(pid: number): string | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  // The command name (field 2) may hold spaces and parentheses: count from its closing one.
  const fields = stat?.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields?.[22 - 3] || undefined;
}

/** The lock file's content: the PID on the first line, so PID-only readers still understand it. */
function format(holder: LockHolder): string {
  return [holder.pid, holder.bootId ?? "", holder.startTime ?? ""].join("\n") + "\n";
}

/** Reads a lock file, old (PID only) or new; garbage gives a NaN PID (stale). */
function parse(text: string): LockHolder {
  const [pid, boot, start] = text.split("\n").map((line) => line.trim());
  return { pid: /^\d+$/.test(pid) ? Number(pid) : Number.NaN, bootId: boot || undefined, startTime: start || undefined };
}

/** Whether the process that wrote `holder` still runs (and still holds `path`, when it is this one). */
function holds(holder: LockHolder, path: string): boolean {
  if (!Number.isInteger(holder.pid) || holder.pid <= 0) return false;
  // A container restarts the server with the PID of its killed predecessor (often 1).
  if (holder.pid === process.pid) return held.has(path);
  if (!isAlive(holder.pid)) return false;
  const boot = bootId();
  if (holder.bootId && boot && holder.bootId !== boot) return false;
  const start = startTime(holder.pid);
  if (holder.startTime && start && holder.startTime !== start) return false;
  return true;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `work` while holding `guard`, a directory: mkdir is atomic, so one
 * process at a time reads, judges and replaces the lock file. Without it two
 * processes could both judge a stale lock and the second remove the first's
 * new one. A guard older than {@link guardStaleMs} was left by a crash and is
 * broken (two processes breaking one such guard at once could still both get
 * in, which needs a crash inside the guard first).
 */
function withGuard<T>(guard: string, work: () => T): T {
  for (const deadline = Date.now() + 2 * guardStaleMs; ; ) {
    try {
      mkdirSync(guard);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let age: number | undefined;
    try {
      age = Date.now() - statSync(guard).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    if (age > guardStaleMs) removeGuard(guard);
    else if (Date.now() > deadline) throw new Error(`Could not lock the data directory: ${guard} stays in place.`);
    else sleepSync(2);
  }
  try {
    return work();
  } finally {
    removeGuard(guard);
  }
}

function removeGuard(guard: string): void {
  try {
    rmdirSync(guard);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

/**
 * Takes the data directory for this process, because two processes writing
 * one PGlite directory silently lose writes. A lock left by a dead process is
 * taken over, also when its PID now belongs to another process (or to this
 * one, as after a container restart). Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "switchboard.lock");
  const mine = format({ pid: process.pid, bootId: bootId(), startTime: startTime(process.pid) });
  withGuard(`${path}.guard`, () => {
    let current: string | undefined;
    try {
      current = readFileSync(path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    if (current !== undefined) {
      const holder = parse(current);
      if (holds(holder, path)) throw new DataDirLockedError(dir, holder.pid);
    }
    // Written whole then renamed, so the lock file is never seen half-written.
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, mine, { mode: 0o600 });
    renameSync(temp, path);
    held.add(path);
  });
  return () => {
    if (!held.delete(path)) return;
    // Left alone if another process took it over meanwhile (it judged this one dead).
    let current: string | undefined;
    try {
      current = readFileSync(path, "utf8");
    } catch {
      return;
    }
    if (current === mine) rmSync(path, { force: true });
  };
}
