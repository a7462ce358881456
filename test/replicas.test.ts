import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startInternHost, type RunningInternHost } from "../src/intern-host/intern-host.js";
import { AdminService } from "../src/gen/switchboard/admin/v1/admin_pb.js";
import { answerBody, contentOf, finalOf, finishOf, promptBody, readChat, toolCallOf } from "./support/chat-harness.js";
import { scriptedAgentCommand } from "./support/scripted-agent-command.js";
import { startServeProcess, stopServeProcess, type ServeProcess } from "./support/serve-process.js";
import { createTestDatabase } from "./support/test-server.js";
import { postVideo, waitForVideo, writeVideoModelsFile } from "./support/video-client.js";
import { startFakeOpenAiVideos, type FakeOpenAiVideos } from "./video-providers/fake-openai-videos.js";

const onPostgres = process.env.SWITCHBOARD_TEST_STORE === "postgres";
const upstreamKey = "sk-upstream-test";
const turnsPerMinute = 4;

// Two `switchboard serve` processes on one PostgreSQL and one Redis, as
// replicas run behind a load balancer (DESIGN §8). Needs PostgreSQL: the
// embedded store belongs to one process.
describe.skipIf(!onPostgres)("two replicas on one PostgreSQL and one Redis", () => {
  let database: { url: string; drop: () => Promise<void> };
  let dir: string;
  let upstream: FakeOpenAiVideos;
  let host: RunningInternHost;
  let a: ServeProcess;
  let b: ServeProcess;
  let tenant: { organization_id: string; api_key: string; management_key: string };
  let admin: ReturnType<typeof createClient<typeof AdminService>>;

  const chat = async (replica: ServeProcess, internId: string, body: object, key = tenant.api_key) =>
    readChat(
      await fetch(`${replica.httpUrl}/api/v1/interns/${internId}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      }),
    );

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), "switchboard-replicas-"));
    upstream = await startFakeOpenAiVideos(upstreamKey);
    const model = { id: "fake/quick", provider: "openai-videos", slug: "fake", base_url: upstream.baseUrl, api_key: upstreamKey, upstream_model: "sora-2", poll_interval_ms: 20, pricing: { per_video: 0.01 } };
    const adminToken = randomBytes(24).toString("base64url");
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: "redis://127.0.0.1:6379",
      // Shared, so either replica can serve any job's content.
      DATA_DIR: join(dir, "data"),
      // Set, as an operator of replicas does: each would otherwise generate its own.
      ADMIN_TOKEN: adminToken,
      // Likewise shared: host tokens and signing secrets sealed through one replica open on the other.
      SECRETS_KEY: randomBytes(32).toString("hex"),
      MODELS_FILE: writeVideoModelsFile(dir, [model]),
      VIDEO_WORKERS: "2",
      CHAT_TURNS_PER_MINUTE: String(turnsPerMinute),
    };
    [a, b] = await Promise.all([startServeProcess(env, ["--bootstrap"]), startServeProcess(env)]);
    tenant = JSON.parse(readFileSync(join(dir, "data", "bootstrap.json"), "utf8"));
    admin = createClient(
      AdminService,
      createConnectTransport({ baseUrl: b.httpUrl, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${adminToken}`), next(req))] }),
    );
    const hostToken = randomBytes(18).toString("base64url");
    host = await startInternHost({ port: 0, token: hostToken, agent: scriptedAgentCommand() });
    await admin.addIntern({ orgId: tenant.organization_id, id: "scripted", endpoint: host.url, token: hostToken, state: "running" });
    // A running intern whose host is not listening: a turn there is refused fast, after taking its rate-limit point.
    await admin.addIntern({ orgId: tenant.organization_id, id: "unreachable", endpoint: "http://127.0.0.1:9", token: hostToken, state: "running" });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([stopServeProcess(a), stopServeProcess(b)]);
    await host?.close();
    await upstream?.close();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a question asked through replica A is answered through replica B, continuing the same run", async () => {
    const asked = await chat(a, "scripted", promptBody("say before\npermission Run-tests allow_once,reject_once\nsay after", { approval_mode: "manual" }));
    expect(finishOf(asked).choices[0].finish_reason).toBe("tool_calls");
    const sessionId = finalOf(asked).session_id;
    expect(sessionId).toEqual(expect.any(String));
    expect(contentOf(asked)).toBe("before");

    const answered = await chat(b, "scripted", answerBody(sessionId, toolCallOf(asked), "allow_once"));
    expect(answered.status).toBe(200);
    // The rest of the run that paused on A: the answer it got, then its remaining output.
    expect(contentOf(answered)).toBe("permission=allow_once-firstafter");
    expect(finishOf(answered).choices[0].finish_reason).toBe("stop");
    expect(finalOf(answered).session_id).toBe(sessionId);

    // The question is answered for both replicas.
    const again = await chat(a, "scripted", answerBody(sessionId, toolCallOf(asked), "allow_once"));
    expect(again.refusal?.error.metadata.reason).toBe("interaction_not_pending");
  });

  // The lookup caches keep entries for 5 s; these changes must hold on A long before that.
  const withinMs = 1_500;
  const untilRefused = async (attempt: () => Promise<Awaited<ReturnType<typeof chat>>>) => {
    const started = Date.now();
    for (;;) {
      const result = await attempt();
      if (result.status !== 200 || Date.now() - started > withinMs) return { result, afterMs: Date.now() - started };
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it("a key revoked through replica B is refused by replica A at once, though A cached it", async () => {
    const member = await admin.addMember({ orgId: tenant.organization_id, email: "revoked@example.com", role: "org:member" });
    const { id, key } = await admin.createKey({ orgId: tenant.organization_id, memberId: member.id });
    expect((await chat(a, "scripted", promptBody("say cached"), key)).status).toBe(200);
    await admin.revokeKey({ id });
    const { result, afterMs } = await untilRefused(() => chat(a, "scripted", promptBody("say late"), key));
    expect(result.status).toBe(401);
    expect(afterMs).toBeLessThan(withinMs);
  });

  it("an intern suspended through replica B is refused by replica A at once, though A cached it", async () => {
    const hostToken = randomBytes(18).toString("base64url");
    const second = await startInternHost({ port: 0, token: hostToken, agent: scriptedAgentCommand() });
    // A budget of its own: the tenant's key has spent turns in other tests.
    const member = await admin.addMember({ orgId: tenant.organization_id, email: "suspension@example.com", role: "org:member" });
    const { key } = await admin.createKey({ orgId: tenant.organization_id, memberId: member.id });
    try {
      await admin.addIntern({ orgId: tenant.organization_id, id: "suspended-later", endpoint: second.url, token: hostToken, state: "running" });
      expect((await chat(a, "suspended-later", promptBody("say cached"), key)).status).toBe(200);
      await admin.setInternState({ orgId: tenant.organization_id, id: "suspended-later", state: "suspended" });
      const { result, afterMs } = await untilRefused(() => chat(a, "suspended-later", promptBody("say late"), key));
      expect(result.status).toBe(409);
      expect(result.refusal.error.metadata.reason).toBe("intern_not_ready");
      expect(afterMs).toBeLessThan(withinMs);
    } finally {
      await second.close();
    }
  });

  it("a member added or removed through replica B shows in replica A's listing at once, though A cached the page", async () => {
    const listed = async () => {
      const response = await fetch(`${a.httpUrl}/api/v1/organization/members?limit=100`, { headers: { authorization: `Bearer ${tenant.management_key}` } });
      return ((await response.json()) as { data: { email: string }[] }).data.map((member) => member.email);
    };
    const until = async (check: (emails: string[]) => boolean) => {
      const started = Date.now();
      while (!check(await listed()) && Date.now() - started <= withinMs) await new Promise((resolve) => setTimeout(resolve, 20));
      return Date.now() - started;
    };
    expect(await listed()).not.toContain("listed-later@example.com");
    const { id } = await admin.addMember({ orgId: tenant.organization_id, email: "listed-later@example.com", role: "org:member" });
    expect(await until((emails) => emails.includes("listed-later@example.com"))).toBeLessThan(withinMs);
    await admin.removeMember({ orgId: tenant.organization_id, memberId: id });
    expect(await until((emails) => !emails.includes("listed-later@example.com"))).toBeLessThan(withinMs);
  });

  it("shares the chat rate limit: turns through A and B count against one budget", async () => {
    const member = await admin.addMember({ orgId: tenant.organization_id, email: "limited@example.com", role: "org:member" });
    const { key } = await admin.createKey({ orgId: tenant.organization_id, memberId: member.id });
    // Alternating, each replica sees only half the turns: per-replica limits would let all of these through.
    const replicas = [a, b, a, b];
    for (const replica of replicas) expect((await chat(replica, "unreachable", promptBody("hello"), key)).refusal?.error.metadata.reason).toBe("intern_unreachable");
    for (const replica of [a, b]) {
      const refused = await chat(replica, "unreachable", promptBody("hello"), key);
      expect(refused.status).toBe(429);
      expect(refused.refusal.error.metadata.reason).toBe("rate_limited");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    }
  });

  it("runs each video job once, whichever replica took it, and either replica serves it", { timeout: 90_000 }, async () => {
    const prompts = Array.from({ length: 8 }, (_, i) => `replicas ${i}`);
    const submitted = await Promise.all(prompts.map((prompt, i) => postVideo([a, b][i % 2].httpUrl, tenant.api_key, { model: "fake/quick", prompt })));
    expect(submitted.map(({ status }) => status)).toEqual(prompts.map(() => 200));
    // Polled through the other replica than the one that accepted it.
    const finished = await Promise.all(submitted.map(({ body }, i) => waitForVideo([b, a][i % 2].httpUrl, tenant.api_key, body.polling_url, { timeoutMs: 60_000 })));
    expect(finished.map(({ job }) => job.status)).toEqual(prompts.map(() => "completed"));
    for (const prompt of prompts) {
      expect(upstream.requests.filter((request) => request.method === "POST" && request.body?.prompt === prompt)).toHaveLength(1);
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ claims: number; claimed_by: string }>("SELECT claims, claimed_by FROM video_jobs WHERE id = ANY($1)", [submitted.map(({ body }) => body.id)]);
      expect(rows.map((row) => row.claims)).toEqual(prompts.map(() => 1));
      // Both processes took part: the queue shared the work rather than one replica doing it all.
      expect(new Set(rows.map((row) => row.claimed_by)).size).toBe(2);
    } finally {
      await client.end();
    }
    for (const [i, { job }] of finished.entries()) {
      const content = await fetch(`${[a, b][i % 2].httpUrl}${job.unsigned_urls[0]}`, { headers: { authorization: `Bearer ${tenant.api_key}` } });
      expect(content.status).toBe(200);
      expect(Buffer.from(await content.arrayBuffer()).equals(upstream.content)).toBe(true);
    }
  });
});
