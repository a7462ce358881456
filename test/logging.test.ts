import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { startTestServer, type TestServer } from "./support/test-server.js";

let t: TestServer;
const lines: string[] = [];

beforeAll(async () => {
  const stream = new PassThrough();
  stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  t = await startTestServer({}, {}, stream);
});
afterAll(() => t?.close());

describe("structured logs", () => {
  it("write one JSON line per request with its request id, and never a key, token or prompt", async () => {
    const prompt = "my very secret prompt text";
    await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${t.tenant.management_key}`, "x-request-id": "req-123" } });
    await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: "Bearer sb-v1-guessed-key" } });
    await fetch(`${t.httpUrl}/api/v1/interns/demo/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.tenant.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: prompt }], stream: false }),
    });
    await t.admin.createKey({ orgId: t.tenant.organization_id, memberId: t.tenant.member_id });
    await new Promise((resolve) => setTimeout(resolve, 50));

    const requestLine = lines.map((line) => JSON.parse(line)).find((entry) => entry.request_id === "req-123" && entry.msg === "request");
    expect(requestLine).toMatchObject({ route: "/api/v1/organization/members", status: 200, method: "GET" });
    const all = lines.join("\n");
    for (const secret of [t.tenant.management_key, t.tenant.api_key, "sb-v1-guessed-key", t.server.adminToken, prompt]) {
      expect(all).not.toContain(secret);
    }
  });
});
