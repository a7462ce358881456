import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { freePort } from "../support/free-port.js";

const root = join(import.meta.dirname, "..", "..");

/** Runs `switchboard serve` expecting it to refuse to start; returns its exit code and all it printed. */
async function failedStart(env: Record<string, string>): Promise<{ code: number; output: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-start-failure-"));
  const ports = { PORT: String(await freePort()), GRPC_PORT: String(await freePort()) };
  const failure = await promisify(execFile)(process.execPath, ["bin/switchboard.js", "serve"], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", ...ports, ...env },
    timeout: 60_000,
  }).then(
    () => ({ code: 0, stdout: "", stderr: "" }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  return { code: failure.code, output: failure.stdout + failure.stderr };
}

describe("a start that cannot succeed", () => {
  it("names an unreachable Redis by its address, without its password or a stack on stderr", { timeout: 90_000 }, async () => {
    const port = await freePort();
    const { code, output } = await failedStart({ REDIS_URL: `redis://:hunter2-secret@127.0.0.1:${port}` });
    expect(code).toBe(1);
    expect(output).toContain(`Redis at 127.0.0.1:${port} is unreachable: connect ECONNREFUSED`);
    expect(output).not.toContain("hunter2-secret");
    expect(output).not.toContain("Unhandled error event");
  });

  it("refuses a WEBHOOK_CA_FILE that holds no certificate", { timeout: 90_000 }, async () => {
    const file = join(mkdtempSync(join(tmpdir(), "switchboard-ca-")), "ca.pem");
    writeFileSync(file, "-----BEGIN PRIVATE KEY-----\nnot a certificate\n-----END PRIVATE KEY-----\n");
    const { code, output } = await failedStart({ WEBHOOK_CA_FILE: file });
    expect(code).toBe(1);
    expect(output).toContain(`WEBHOOK_CA_FILE ${file} holds no PEM certificate.`);
  });
});
