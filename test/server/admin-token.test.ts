import { execFile } from "node:child_process";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { adminTokenPath, resolveAdminToken } from "../../src/server/admin-token.js";
import { temporaryDirectories } from "../support/temporary-directories.js";

const run = promisify(execFile);
const dirs = temporaryDirectories("switchboard-admin-token-");
const newDir = dirs.make;
afterEach(dirs.removeAll);

describe("the generated admin token", () => {
  it("is made once, mode 0600, and read back on later starts", () => {
    const dir = newDir();
    const token = resolveAdminToken(undefined, dir);
    expect(token).toMatch(/^sb-admin-[\w-]{43}$/);
    expect(statSync(adminTokenPath(dir)).mode & 0o777).toBe(0o600);
    expect(resolveAdminToken(undefined, dir)).toBe(token);
    expect(readdirSync(dir)).toEqual(["admin-token"]);
    expect(resolveAdminToken("configured", dir)).toBe("configured");
  });

  it("is the same for replicas sharing DATA_DIR that start at the same moment", { timeout: 60_000 }, async () => {
    const dir = newDir();
    const module = new URL("../../src/server/admin-token.ts", import.meta.url).href;
    // Each process waits for the same instant, then resolves the token.
    const at = Date.now() + 3_000;
    const script = `const { resolveAdminToken } = await import(${JSON.stringify(module)}); while (Date.now() < ${at}); process.stdout.write(resolveAdminToken(undefined, ${JSON.stringify(dir)}));`;
    const tokens = await Promise.all(Array.from({ length: 6 }, () => run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script]).then(({ stdout }) => stdout)));
    expect(new Set(tokens).size).toBe(1);
    expect(readFileSync(adminTokenPath(dir), "utf8").trim()).toBe(tokens[0]);
    expect(readdirSync(dir)).toEqual(["admin-token"]);
  });

  it("refuses, clearly, a token file left empty", () => {
    const dir = newDir();
    writeFileSync(adminTokenPath(dir), "");
    expect(() => resolveAdminToken(undefined, dir)).toThrow(/holds no token; delete it or set ADMIN_TOKEN/);
  });
});
