import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { guardChild, releaseChild } from "./chat-path/orphan-guard.js";

/** A bench server in a process of its own. */
export interface BenchChild {
  /** What the child printed as its URL. */
  url: string;
  pid: number;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Runs a bench script (TypeScript, through tsx) in a child process, as the
 * servers it stands beside run in processes of their own, and waits for the
 * `{"url": …}` line it prints once it listens. The child is killed with the
 * bench however the bench ends.
 */
export async function spawnBenchChild(script: string, args: readonly string[], what: string): Promise<BenchChild> {
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const child: ChildProcess = spawn(process.execPath, ["--import", tsxLoader, script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  guardChild(child.pid!);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve(releaseChild(child.pid!))));
  try {
    const lines = createInterface({ input: child.stdout! });
    const first = await new Promise<string>((resolve, reject) => {
      lines.once("line", resolve);
      void exited.then(() => reject(new Error(`${what} exited before it listened.`)));
    });
    lines.close();
    return {
      url: (JSON.parse(first) as { url: string }).url,
      pid: child.pid!,
      async stop() {
        child.kill("SIGTERM");
        await exited;
      },
    };
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    throw error;
  }
}
