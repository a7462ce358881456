import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "../support/free-port.js";

const root = join(import.meta.dirname, "..", "..");

describe("npm start under a supervisor", () => {
  // A supervisor signals the process it started, here npm: the server must
  // hear it, where npm's shell would die and leave the server running.
  it("passes SIGTERM on to the server, which shuts down gracefully and frees its port", { timeout: 90_000 }, async () => {
    const port = await freePort();
    const npm = spawn("npm", ["start"], {
      cwd: root,
      env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), "switchboard-npm-start-")), PORT: String(port), GRPC_PORT: String(await freePort()), EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    for (const stream of [npm.stdout!, npm.stderr!]) stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const healthz = () => fetch(`http://127.0.0.1:${port}/healthz`).then((response) => response.ok, () => false);
    try {
      for (const deadline = Date.now() + 60_000; !(await healthz()); ) {
        if (Date.now() > deadline || npm.exitCode !== null) throw new Error(`npm start did not serve: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // The server holds npm's stdout too: the pipe closes only once both have exited.
      const closed = new Promise<boolean>((resolve) => {
        npm.once("close", () => resolve(true));
        setTimeout(() => resolve(false), 20_000).unref();
      });
      npm.kill("SIGTERM");
      if (!(await closed)) throw new Error(`the server outlived SIGTERM to npm start: ${output}`);
      expect(output).toContain('"msg":"shutting down"');
      expect(await healthz()).toBe(false);
    } finally {
      npm.kill("SIGKILL");
    }
  });
});
