import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { freePort } from "./free-port.js";

const root = join(import.meta.dirname, "..", "..");

/** A `switchboard serve` child process, ready to take traffic. */
export interface ServeProcess {
  child: ChildProcess;
  httpUrl: string;
  grpcUrl: string;
  /** Resolves when the process has exited. */
  exited: Promise<unknown>;
}

/**
 * Starts `switchboard serve` as an operator runs it, in a process of its own,
 * on free ports, and waits for /readyz. One speech worker unless `env` says
 * otherwise: each warms up for seconds of CPU.
 */
export async function startServeProcess(env: Record<string, string>, args: string[] = []): Promise<ServeProcess> {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ["bin/switchboard.js", "serve", ...args], {
    cwd: root,
    env: { ...process.env, EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", LOG_LEVEL: "warn", ...env, PORT: String(port), GRPC_PORT: String(grpcPort) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Kept for the failure message: pino logs to stdout, crashes go to stderr.
  let output = "";
  for (const stream of [child.stdout!, child.stderr!]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const httpUrl = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; ; ) {
    if (child.exitCode !== null) throw new Error(`switchboard serve exited with ${child.exitCode}: ${output}`);
    const ready = await fetch(`${httpUrl}/readyz`).then((response) => response.ok, () => false);
    if (ready) return { child, httpUrl, grpcUrl: `http://127.0.0.1:${grpcPort}`, exited };
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`switchboard serve did not become ready: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Stops a served process: SIGTERM, then SIGKILL if it lingers. */
export async function stopServeProcess(served: ServeProcess | undefined): Promise<void> {
  if (!served || served.child.exitCode !== null) return;
  served.child.kill("SIGTERM");
  const timer = setTimeout(() => served.child.kill("SIGKILL"), 10_000);
  await served.exited;
  clearTimeout(timer);
}
