import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bootstrapPath, bootstrapTenant, isEmptyStore } from "../../src/server/bootstrap.js";
import { hashKey } from "../../src/store/api-keys.js";
import { openStore } from "../../src/store/store.js";
import { startServeProcess, stopServeProcess, type ServeProcess } from "../support/serve-process.js";
import { serverSecrets, testSecrets } from "../support/test-server.js";
import { temporaryDirectories } from "../support/temporary-directories.js";

const root = join(import.meta.dirname, "..", "..");
const dirs = temporaryDirectories("switchboard-bootstrap-");
const dataDir = dirs.make;
let served: ServeProcess | undefined;

afterEach(async () => {
  await stopServeProcess(served);
  served = undefined;
  dirs.removeAll();
});

/** Runs a first `switchboard serve` that is SIGKILLed at `at` on bootstrap.json; resolves with how it ended. */
function crashingFirstStart(dir: string, at: "write" | "rename"): Promise<string> {
  const child = spawn(process.execPath, ["--import", join(root, "test/support/kill-at.mjs"), "bin/switchboard.js", "serve"], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dir, PORT: "0", GRPC_PORT: "0", EMBEDDED_INTERN_HOST: "0", SPEECH_WORKERS: "1", KILL_AT: at, KILL_AT_FILE: "bootstrap.json" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      // Serving means the crash point was never reached.
      if (chunk.toString().includes('"switchboard serving"')) child.kill("SIGTERM");
    });
    child.once("exit", (code, signal) => resolve(signal ?? `exit ${code}`));
  });
}

describe("first-start bootstrap", () => {
  it("leaves the store empty when bootstrap.json cannot be written, and succeeds on the next try", async () => {
    const dir = dataDir();
    const store = await openStore({ dataDir: dir, secrets: testSecrets });
    try {
      mkdirSync(bootstrapPath(dir)); // in the way of the file
      await expect(bootstrapTenant(store, dir, { demoIntern: true })).rejects.toThrow();
      expect(await isEmptyStore(store.db)).toBe(true);
      rmSync(bootstrapPath(dir), { recursive: true });
      const tenant = (await bootstrapTenant(store, dir, { demoIntern: true }))!;
      expect(JSON.parse(readFileSync(bootstrapPath(dir), "utf8"))).toEqual(tenant);
      expect(await store.apiKeys.findByHash(hashKey(tenant.management_key))).toMatchObject({ orgId: tenant.organization_id, kind: "management" });
      expect(await store.interns.find(tenant.organization_id, "demo")).toMatchObject({ state: "running" });
    } finally {
      await store.close();
    }
  });

  for (const at of ["write", "rename"] as const) {
    it(`bootstraps afresh after a crash as bootstrap.json is ${at === "write" ? "written" : "renamed into place"}`, { timeout: 120_000 }, async () => {
      const dir = dataDir();
      expect(await crashingFirstStart(dir, at)).toBe("SIGKILL");
      served = await startServeProcess({ DATA_DIR: dir });
      expect(existsSync(bootstrapPath(dir))).toBe(true);
      const tenant = JSON.parse(readFileSync(bootstrapPath(dir), "utf8"));
      const members = await fetch(`${served.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${tenant.management_key}` } });
      expect(members.status).toBe(200);
      await stopServeProcess(served);
      served = undefined;
      const store = await openStore({ dataDir: dir, secrets: serverSecrets(dir) });
      try {
        expect(await store.db.query("SELECT id FROM organizations")).toEqual([{ id: tenant.organization_id }]);
      } finally {
        await store.close();
      }
    });
  }
});
