import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { createClient, ConnectError } from "@connectrpc/connect";
import { OrganizationService } from "../src/gen/switchboard/v1/organization_pb.js";
import { grpcTransportFor, type TestServer } from "./support/test-server.js";
import { promptBody, readChat, startChatHarness, type ChatHarness } from "./support/chat-harness.js";
import { postSpeech } from "./support/speech-http.js";

let h: ChatHarness;
let t: TestServer;
const lines: string[] = [];
const entries = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
const requestLines = (requestId: string) => entries().filter((entry) => entry.request_id === requestId && entry.msg === "request");

/** The request's log line, once the server wrote it (onResponse runs after the client has the response). */
async function lineOf(requestId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const found = requestLines(requestId);
    if (found.length > 0) return found[0];
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const prompt = "my very secret prompt text";
const spokenText = "a sentence nobody may log";

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  h = await startChatHarness({ logStream: stream });
  t = h.t;
});
afterAll(() => h?.close());

describe("structured logs", () => {
  it("write one line per bridge request with route, status, organization, latency and request id", async () => {
    await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${t.tenant.management_key}`, "x-request-id": "req-123" } });
    const line = await lineOf("req-123");
    expect(line).toMatchObject({
      route: "/api/v1/organization/members",
      method: "GET",
      status: 200,
      org_id: t.tenant.organization_id,
      rpc: "switchboard.v1.OrganizationService/ListMembers",
    });
    expect(line.ms).toEqual(expect.any(Number));
    expect(line.reason).toBeUndefined();
    expect(requestLines("req-123")).toHaveLength(1);
  });

  it("write the line, echo the request id and count the request for refusals made before routing", async () => {
    for (const [id, path] of [["req-pct", "/api/v1/videos/%zz"], ["req-long", `/api/v1/videos/${"a".repeat(1100)}`]]) {
      const response = await fetch(`${t.httpUrl}${path}`, { headers: { "x-request-id": id } });
      expect([response.status, response.headers.get("x-request-id")]).toEqual([400, id]);
      expect(await lineOf(id)).toMatchObject({ route: "unmatched", method: "GET", status: 400, reason: "bad_request" });
      expect(requestLines(id)).toHaveLength(1);
    }
    const metrics = await (await fetch(`${t.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_http_request_duration_seconds_count\{route="unmatched",method="GET",status="400",reason="bad_request"\} [1-9]/);
  });

  it("carry the catalogue reason of a refusal, from the core or from the bridge itself", async () => {
    await fetch(`${t.httpUrl}/api/v1/interns/nobody/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json", "x-request-id": "req-404" },
      body: JSON.stringify({ messages: [{ role: "user", content: prompt }], stream: true }),
    });
    expect(await lineOf("req-404")).toMatchObject({ status: 404, reason: "not_found", org_id: t.tenant.organization_id, route: "/api/v1/interns/:internId/chat/completions" });

    await fetch(`${t.httpUrl}/api/v1/interns/demo/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json", "x-request-id": "req-400" },
      body: "{not json",
    });
    expect(await lineOf("req-400")).toMatchObject({ status: 400, reason: "bad_request" });

    await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: "Bearer sb-v1-guessed-key", "x-request-id": "req-401" } });
    const refused = await lineOf("req-401");
    expect(refused).toMatchObject({ status: 401 });
    expect(refused.org_id).toBeUndefined();
    expect(requestLines("req-401")).toHaveLength(1);
  });

  it("carry the generation id of a speech synthesis, and never its text or audio", async () => {
    const reply = await postSpeech(
      t.httpUrl,
      { model: "local/espeak-ng", voice: "alloy", input: spokenText, response_format: "pcm" },
      { key: t.tenant.api_key, headers: { "x-request-id": "req-speech" } },
    );
    expect(reply.status).toBe(200);
    const generationId = reply.headers.get("x-generation-id");
    expect(generationId).toMatch(/^gen-/);
    expect(await lineOf("req-speech")).toMatchObject({ status: 200, route: "/api/v1/audio/speech", generation_id: generationId, org_id: t.tenant.organization_id });
    expect(lines.join("\n")).not.toContain(reply.audio.subarray(0, 24).toString("base64"));
  });

  it("write one line for a streamed chat turn, with its completion id as generation id, once the stream ended", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/interns/${h.internId}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json", "x-request-id": "req-chat" },
      body: JSON.stringify(promptBody(`say ${prompt}`)),
    });
    const result = await readChat(response);
    expect(result.done).toBe(true);
    expect(await lineOf("req-chat")).toMatchObject({
      route: "/api/v1/interns/:internId/chat/completions",
      status: 200,
      org_id: t.tenant.organization_id,
      generation_id: result.chunks[0].id,
      rpc: "switchboard.v1.InternChatService/CreateChatCompletion",
    });
  });

  it("write one line per direct gRPC call, with its method, gRPC code and public status", async () => {
    const members = createClient(OrganizationService, grpcTransportFor(t.grpcUrl, t.tenant.management_key));
    await members.listMembers({}, { headers: { "x-request-id": "grpc-ok" } });
    expect(await lineOf("grpc-ok")).toMatchObject({
      route: "/switchboard.v1.OrganizationService/ListMembers",
      code: "ok",
      status: 200,
      org_id: t.tenant.organization_id,
    });
    expect(requestLines("grpc-ok")).toHaveLength(1);

    const standard = createClient(OrganizationService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    await expect(standard.listMembers({}, { headers: { "x-request-id": "grpc-refused" } })).rejects.toBeInstanceOf(ConnectError);
    expect(await lineOf("grpc-refused")).toMatchObject({ code: "unauthenticated", status: 401, reason: "management_key_required" });
  });

  it("never contain a key, a token or a prompt", async () => {
    await fetch(`${t.httpUrl}/api/v1/interns/demo/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json", "x-request-id": "req-prompt" },
      body: JSON.stringify({ messages: [{ role: "user", content: prompt }], stream: false }),
    });
    await t.admin.createKey({ orgId: t.tenant.organization_id, memberId: t.tenant.member_id }, { headers: { "x-request-id": "req-admin" } });
    await lineOf("req-prompt");
    await lineOf("req-admin");
    // Every request above, and nothing else, wrote exactly one line: no second line from the core call a bridge request made.
    const setup = "/switchboard.admin.v1.AdminService/AddIntern"; // the harness registering its intern
    const ids = entries().filter((entry) => entry.msg === "request" && entry.route !== setup && entry.route !== "/metrics").map((entry) => entry.request_id);
    expect(ids.sort()).toEqual(["grpc-ok", "grpc-refused", "req-123", "req-400", "req-401", "req-404", "req-admin", "req-chat", "req-long", "req-pct", "req-prompt", "req-speech"]);
    const all = lines.join("\n");
    for (const secret of [t.tenant.management_key, t.tenant.api_key, "sb-v1-guessed-key", t.server.adminToken, prompt, spokenText]) {
      expect(all).not.toContain(secret);
    }
  });
});
