import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { execFile, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "../src/gen/grpc/health/v1/health_pb.js";
import { DataDirLockedError, lockDataDir } from "../src/store/data-dir-lock.js";
import { createPgliteDatabase } from "../src/store/pglite-database.js";
import { freePort } from "./support/free-port.js";
import { getJson, grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { temporaryDirectories } from "./support/temporary-directories.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

/** Runs `switchboard admin …` as an operator would and parses its JSON. */
async function admin(...args: string[]): Promise<{ code: number; out: any; err: any }> {
  const argv = ["bin/switchboard.js", "admin", "--server", t.httpUrl, "--token", t.server.adminToken, ...args];
  try {
    const { stdout } = await run(process.execPath, argv, { cwd: root });
    return { code: 0, out: JSON.parse(stdout), err: undefined };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, out: undefined, err: JSON.parse(failure.stderr.trim().split("\n").pop()!) };
  }
}

describe("switchboard admin", () => {
  it("sets up a tenant whose keys work, end to end", { timeout: 60_000 }, async () => {
    const org = await admin("org", "create", "--name", "Acme");
    expect(org.out.id).toMatch(/^org_/);
    const member = await admin("member", "add", "--org", org.out.id, "--email", "ada@acme.test", "--first-name", "Ada", "--last-name", "L", "--role", "org:admin");
    expect(member.out.id).toMatch(/^mem_/);
    const key = await admin("key", "create", "--org", org.out.id, "--member", member.out.id, "--management");
    expect(key.out).toEqual({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^sb-v1-/) });
    expect((await getJson(`${t.httpUrl}/api/v1/organization/members`, key.out.key)).body.data[0].email).toBe("ada@acme.test");
    expect((await admin("programme", "join", "--org", org.out.id)).out).toEqual({});
    expect((await admin("intern", "add", "--org", org.out.id, "--id", "bob", "--endpoint", "http://127.0.0.1:9", "--token", "host-secret", "--state", "running")).out).toEqual({ id: "bob" });
    expect((await admin("intern", "state", "--id", "bob", "--state", "suspended")).out).toEqual({});
    expect((await admin("credits", "set", "--org", org.out.id, "--usd", "12.5")).out).toEqual({});
    expect(await t.server.store.organizations.credits(org.out.id)).toBe(12.5);
    expect((await admin("key", "revoke", "--id", key.out.id)).out).toEqual({});
    expect((await getJson(`${t.httpUrl}/api/v1/organization/members`, key.out.key)).status).toBe(401);
    expect((await admin("member", "remove", "--org", org.out.id, "--member", member.out.id)).out).toEqual({});
  });

  it("prints the error envelope and exits 1 on a refusal", async () => {
    const result = await admin("member", "add", "--org", "org_missing", "--email", "a@b.c", "--first-name", "A", "--last-name", "B", "--role", "org:member");
    expect(result.code).toBe(1);
    expect(result.err.error).toMatchObject({ code: 404, metadata: { reason: "not_found" } });
    const badRole = await admin("member", "add", "--org", t.tenant.organization_id, "--email", "a@b.c", "--first-name", "A", "--last-name", "B", "--role", "org:owner");
    expect(badRole.err.error.code).toBe(400);
  });

  it("refuses a wrong admin token", async () => {
    const argv = ["bin/switchboard.js", "admin", "--server", t.httpUrl, "--token", "wrong", "org", "create", "--name", "X"];
    const failure = await run(process.execPath, argv, { cwd: root }).catch((e) => e);
    expect(failure.code).toBe(1);
    expect(JSON.parse(failure.stderr).error.code).toBe(401);
  });

  it("names the cause, not a server error, when --server is not the server's HTTP/1.1 listener", async () => {
    const deadPort = await freePort();
    for (const [server, cause] of [[t.grpcUrl, /Parse Error|EPIPE|ECONNRESET/], [`http://127.0.0.1:${deadPort}`, /ECONNREFUSED/]] as const) {
      const failure = await run(process.execPath, ["bin/switchboard.js", "admin", "--server", server, "--token", t.server.adminToken, "org", "create", "--name", "X"], { cwd: root }).catch((e) => e);
      expect(failure.code).toBe(1);
      const { error } = JSON.parse(failure.stderr);
      expect(error.code).toBeUndefined();
      expect(error.message).toContain(`No answer from AdminService at ${server}: `);
      expect(error.message).toMatch(cause);
    }
    const notUrl = await run(process.execPath, ["bin/switchboard.js", "admin", "--server", "ftp://x", "org", "create", "--name", "X"], { cwd: root }).catch((e) => e);
    expect(notUrl.code).toBe(1);
    expect(notUrl.stderr).toContain("must be an http:// or https:// URL");
  });

  it("refuses a credit amount that is not a decimal number, empty included, and changes nothing", async () => {
    expect((await admin("credits", "set", "--org", t.tenant.organization_id, "--usd", "7.25")).code).toBe(0);
    for (const bad of ["", " ", "0x10", "1e3", "-1"]) {
      const failure = await run(process.execPath, ["bin/switchboard.js", "admin", "--server", t.httpUrl, "--token", t.server.adminToken, "credits", "set", "--org", t.tenant.organization_id, "--usd", bad], { cwd: root }).catch((e) => e);
      expect([failure.code, failure.stderr]).toEqual([1, expect.stringContaining("must be a non-negative decimal number")]);
    }
    expect(await t.server.store.organizations.credits(t.tenant.organization_id)).toBe(7.25);
  });
});

describe("operational endpoints", () => {
  it("serves /healthz, /readyz and Prometheus /metrics", async () => {
    expect((await getJson(`${t.httpUrl}/healthz`)).body).toEqual({ status: "ok" });
    // Not ready until the speech engine has warmed up (it takes the cores for a few seconds).
    await vi.waitFor(async () => expect(await getJson(`${t.httpUrl}/readyz`)).toMatchObject({ status: 200, body: { status: "ready" } }), {
      timeout: 60_000,
      interval: 200,
    });
    const metrics = await (await fetch(`${t.httpUrl}/metrics`)).text();
    expect(metrics).toContain("switchboard_http_request_duration_seconds");
    expect(metrics).toContain("process_resident_memory_bytes");
  });

  it("serves grpc.health.v1 on both listeners", async () => {
    for (const url of [t.grpcUrl]) {
      const health = createClient(Health, grpcTransportFor(url));
      expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      expect((await health.check({ service: "switchboard.v1.InternChatService" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    }
    const overHttp1 = await fetch(`${t.httpUrl}/grpc.health.v1.Health/Check`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(await overHttp1.json()).toEqual({ status: "SERVING" });
  });

  it("streams SERVICE_UNKNOWN to a health watch of an unknown service, as the protocol asks", async () => {
    const health = createClient(Health, grpcTransportFor(t.grpcUrl));
    const abort = new AbortController();
    const stream = health.watch({ service: "no.such.Service" }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await stream.next()).value?.status).toBe(HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN);
    abort.abort();
    await stream.next().catch(() => undefined);
  });

  it("lists every service through reflection with buf curl", async () => {
    const { stdout } = await run(join(root, "node_modules/.bin/buf"), ["curl", "--http2-prior-knowledge", "--list-methods", t.grpcUrl], { cwd: root });
    for (const method of [
      "switchboard.v1.InternChatService/CreateChatCompletion",
      "switchboard.v1.OrganizationService/ListMembers",
      "switchboard.v1.SpeechService/CreateSpeech",
      "switchboard.v1.VideoService/CreateVideo",
      "switchboard.admin.v1.AdminService/CreateKey",
    ]) {
      expect(stdout).toContain(method);
    }
  });

  it("calls a method through reflection with buf curl", async () => {
    const { stdout } = await run(
      join(root, "node_modules/.bin/buf"),
      ["curl", "--http2-prior-knowledge", "--protocol", "grpc", "-H", `authorization: Bearer ${t.tenant.management_key}`, "-d", '{"limit": 1}', `${t.grpcUrl}/switchboard.v1.OrganizationService/ListMembers`],
      { cwd: root },
    );
    expect(JSON.parse(stdout)).toMatchObject({ data: [{ email: "admin@example.com" }], totalCount: expect.anything() });
  });
});

describe("embedded data directory lock", () => {
  const dirs = temporaryDirectories("switchboard-lock-");
  afterEach(dirs.removeAll);

  it("refuses a directory held by a live process, with a clear error", async () => {
    const dir = dirs.make();
    const holder = spawn("sleep", ["30"]);
    try {
      writeFileSync(join(dir, "switchboard.lock"), String(holder.pid));
      expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
      expect(() => lockDataDir(dir)).toThrow(/in use by process/);
    } finally {
      holder.kill();
    }
  });

  it("refuses a second open of the same store and takes over a dead process's lock", async () => {
    const dir = dirs.make();
    const db = await createPgliteDatabase(dir);
    try {
      await expect(createPgliteDatabase(dir)).rejects.toThrow(DataDirLockedError);
    } finally {
      await db.close();
    }
    writeFileSync(join(dir, "switchboard.lock"), "999999");
    const release = lockDataDir(dir);
    release();
  });
});
