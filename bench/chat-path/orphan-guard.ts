import { rmSync } from "node:fs";

/** Processes the bench started and has not seen exit, and temporary directories it has not removed yet. */
const living = new Set<number>();
const directories = new Set<string>();
let hookInstalled = false;

function installHook(): void {
  if (hookInstalled) return;
  hookInstalled = true;
  process.once("exit", () => {
    for (const orphan of living) {
      try {
        process.kill(orphan, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });
  // Without a handler, SIGINT/SIGTERM would end the process without running the exit hook.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
}

/**
 * Remembers a process the bench started, so it is killed (SIGKILL, by pid)
 * when the bench process exits however it exits: a thrown error, Ctrl-C.
 */
export function guardChild(pid: number): void {
  installHook();
  living.add(pid);
}

/** Forgets a process that exited or was stopped. */
export function releaseChild(pid: number): void {
  living.delete(pid);
}

/** Remembers a temporary directory, removed at exit unless {@link releaseDirectory} ran first. */
export function guardDirectory(path: string): void {
  installHook();
  directories.add(path);
}

/** Forgets a directory the bench removed itself. */
export function releaseDirectory(path: string): void {
  directories.delete(path);
}
