import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { InternChatService } from "../src/gen/switchboard/v1/chat_pb.js";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { answerBody, contentOf, finalOf, promptBody, startChatHarness, toolCallOf, type ChatHarness } from "./support/chat-harness.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";

let t: TestServer;
let outsiderKey: string;
let departedKey: string;
let grantedDepartedKey: string;

const chatUrl = (intern = "unreachable") => `${t.httpUrl}/api/v1/interns/${intern}/chat/completions`;
const prompt = { messages: [{ role: "user", content: "hello" }], stream: true };

async function post(body: unknown, key: string | null = t.tenant.api_key, intern?: string, raw?: string) {
  const response = await fetch(chatUrl(intern), {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: raw ?? JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

beforeAll(async () => {
  t = await startTestServer({ CHAT_TURNS_PER_MINUTE: "3" });
  const orgId = t.tenant.organization_id;
  // An intern whose host is not listening: refusals after lookup end at 502.
  await t.admin.addIntern({ orgId, id: "unreachable", endpoint: "http://127.0.0.1:9", token: "secret", state: "running" });
  await t.admin.addIntern({ orgId, id: "asleep", endpoint: "http://127.0.0.1:9", token: "secret", state: "suspended" });
  const outsider = await t.admin.createOrganization({ name: "Outsider" });
  const outsiderMember = await t.admin.addMember({ orgId: outsider.id, email: "o@example.com", role: "org:admin" });
  outsiderKey = (await t.admin.createKey({ orgId: outsider.id, memberId: outsiderMember.id })).key;
  const leaver = await t.admin.addMember({ orgId, email: "leaver@example.com", role: "org:member" });
  departedKey = (await t.admin.createKey({ orgId, memberId: leaver.id })).key;
  grantedDepartedKey = (await t.admin.createKey({ orgId, memberId: leaver.id, grant: true })).key;
  await t.admin.removeMember({ orgId, memberId: leaver.id });
});
afterAll(() => t?.close());

describe("chat refusals before the stream opens", () => {
  it("401 without metadata for a missing or invalid key", async () => {
    for (const key of [null, "sb-v1-wrong"]) {
      const { status, body } = await post(prompt, key);
      expect(status).toBe(401);
      expect(body).toEqual({ error: { code: 401, message: "The API key is invalid or missing." } });
    }
  });

  it("404 without metadata for callers outside the programme, on every /interns path", async () => {
    const { status, body } = await post(prompt, outsiderKey);
    expect(status).toBe(404);
    expect(body.error.metadata).toBeUndefined();
    await t.admin.setProgrammeMembership({ orgId: t.tenant.organization_id, member: false });
    try {
      const own = await post(prompt);
      expect(own.status).toBe(404);
      expect(own.body.error.metadata).toBeUndefined();
    } finally {
      await t.admin.setProgrammeMembership({ orgId: t.tenant.organization_id, member: true });
    }
  });

  it("the key and the programme are decided before the body: 401, 403 and the bare 404 whatever it holds", async () => {
    const big = JSON.stringify({ ...prompt, padding: "x".repeat(1024 * 1024) });
    for (const raw of ["{nope", "[1]", big]) {
      expect((await post(undefined, null, undefined, raw)).body).toEqual({ error: { code: 401, message: "The API key is invalid or missing." } });
      expect((await post(undefined, outsiderKey, undefined, raw)).body).toEqual({ error: { code: 404, message: "Not found." } });
      expect((await post(undefined, departedKey, undefined, raw)).status).toBe(403);
    }
    // A caller in the programme learns what is wrong with its body.
    expect((await post(undefined, t.tenant.api_key, undefined, "{nope")).body.error.metadata.reason).toBe("bad_request");
    expect((await post(undefined, t.tenant.api_key, undefined, big)).status).toBe(413);
    // Other paths under /interns: the bare 404 outside the programme, not_found inside it.
    for (const path of ["/api/v1/interns", "/api/v1/interns/demo", "/api/v1/interns/demo/chat/completions"]) {
      const outside = await fetch(`${t.httpUrl}${path}`, { headers: { authorization: `Bearer ${outsiderKey}` } });
      expect([outside.status, await outside.json()]).toEqual([404, { error: { code: 404, message: "Not found." } }]);
      const inside = await fetch(`${t.httpUrl}${path}`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
      expect([inside.status, (await inside.json()).error.metadata.reason]).toEqual([404, "not_found"]);
      const anonymous = await fetch(`${t.httpUrl}${path}`);
      expect(anonymous.status).toBe(401);
    }
  });

  it("404 for an intern id no intern can have: NUL, or longer than a path segment may be", async () => {
    expect((await post(prompt, t.tenant.api_key, "de%00mo")).body.error.metadata.reason).toBe("not_found");
    const longest = "a".repeat(128);
    expect((await post(prompt, t.tenant.api_key, longest)).body.error).toEqual({ code: 404, message: `Intern ${longest} not found.`, metadata: { reason: "not_found", retryable: false } });
  });

  it("counts the prompt and ids in characters, not UTF-16 units", async () => {
    // 20,000 emoji (40,000 units) is within 32,000 characters: it gets as far as the intern, which is asleep.
    const emoji = (n: number) => "😀".repeat(n);
    expect((await post({ ...prompt, messages: [{ role: "user", content: emoji(20_000) }] }, t.tenant.api_key, "asleep")).status).toBe(409);
    expect((await post({ ...prompt, model: emoji(256), session_id: emoji(256) }, t.tenant.api_key, "asleep")).status).toBe(409);
    const over = await post({ ...prompt, messages: [{ role: "user", content: emoji(32_001) }] }, t.tenant.api_key, "asleep");
    expect([over.status, over.body.error.message]).toEqual([400, "The user prompt exceeds 32000 characters."]);
  });

  it("403 without metadata when the key's creator left and it holds no grant", async () => {
    const { status, body } = await post(prompt, departedKey);
    expect(status).toBe(403);
    expect(body.error.metadata).toBeUndefined();
    // With a grant the key still works: it gets as far as the intern.
    expect((await post(prompt, grantedDepartedKey, "nobody")).status).toBe(404);
  });

  it.each([
    ["messages missing", { stream: true }],
    ["messages empty", { messages: [], stream: true }],
    ["stream absent", { messages: [{ role: "user", content: "x" }] }],
    ["stream false", { messages: [{ role: "user", content: "x" }], stream: false }],
    ["stream not a boolean", { messages: [{ role: "user", content: "x" }], stream: "true" }],
    ["unknown role", { messages: [{ role: "robot", content: "x" }], stream: true }],
    ["user content null", { messages: [{ role: "user", content: null }], stream: true }],
    ["content a number", { messages: [{ role: "user", content: 5 }], stream: true }],
    ["image part", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }], stream: true }],
    ["prompt too long", { messages: [{ role: "user", content: "x".repeat(32_001) }], stream: true }],
    ["empty prompt", { messages: [{ role: "user", content: "" }], stream: true }],
    ["bad approval_mode", { ...prompt, approval_mode: "auto" }],
    ["model empty", { ...prompt, model: "" }],
    ["model too long", { ...prompt, model: "m".repeat(257) }],
    ["session_id too long", { ...prompt, session_id: "s".repeat(257) }],
    ["tool without session_id", { messages: [{ role: "tool", content: "allow_once", tool_call_id: "i1" }], stream: true }],
    ["tool without tool_call_id", { messages: [{ role: "tool", content: "allow_once" }], stream: true, session_id: "s" }],
    ["tool_call_id too long", { messages: [{ role: "tool", content: "allow_once", tool_call_id: "i".repeat(129) }], stream: true, session_id: "s" }],
    [
      "echoed tool call without function",
      { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "i1", type: "function" }] }, { role: "tool", content: "allow_once", tool_call_id: "i1" }], stream: true, session_id: "s" },
    ],
    [
      "echoed tool call with an empty function",
      { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "i1", type: "function", function: {} }] }, { role: "tool", content: "allow_once", tool_call_id: "i1" }], stream: true, session_id: "s" },
    ],
    [
      "echoed tool call without arguments",
      {
        messages: [{ role: "assistant", content: null, tool_calls: [{ id: "i1", type: "function", function: { name: "service.provide_input" } }] }, { role: "tool", content: "allow_once", tool_call_id: "i1" }],
        stream: true,
        session_id: "s",
      },
    ],
    [
      "echoed arguments not a string",
      {
        messages: [
          { role: "assistant", content: null, tool_calls: [{ id: "i1", type: "function", function: { name: "service.provide_input", arguments: {} } }] },
          { role: "tool", content: "allow_once", tool_call_id: "i1" },
        ],
        stream: true,
        session_id: "s",
      },
    ],
    ["last message assistant", { messages: [{ role: "assistant", content: "hi" }], stream: true }],
    ["body an array", [1, 2]],
  ])("400 bad_request: %s", async (_name, body) => {
    const { status, body: envelope } = await post(body);
    expect(status).toBe(400);
    expect(envelope.error).toMatchObject({ code: 400, metadata: { reason: "bad_request", retryable: false } });
  });

  it("400 for malformed JSON, with the envelope", async () => {
    const { status, body } = await post(undefined, t.tenant.api_key, "unreachable", "{not json");
    expect(status).toBe(400);
    expect(body.error.metadata.reason).toBe("bad_request");
  });

  it("413 payload_too_large above 1 MiB", async () => {
    const { status, body } = await post({ ...prompt, padding: "x".repeat(1024 * 1024) });
    expect(status).toBe(413);
    expect(body.error).toMatchObject({ code: 413, metadata: { reason: "payload_too_large" } });
  });

  it("ignores unknown fields such as temperature and tools", async () => {
    const { status } = await post({ ...prompt, temperature: 0.2, tools: [{ type: "function" }] }, t.tenant.api_key, "nobody");
    expect(status).toBe(404);
  });

  it("404 not_found for an intern of another organization or none", async () => {
    const { status, body } = await post(prompt, t.tenant.api_key, "nobody");
    expect(status).toBe(404);
    expect(body.error.metadata.reason).toBe("not_found");
  });

  it("409 intern_not_ready for an intern that is not running", async () => {
    const { status, body } = await post(prompt, t.tenant.api_key, "asleep");
    expect(status).toBe(409);
    expect(body.error.metadata.reason).toBe("intern_not_ready");
  });

  it("an admin change to an intern holds at once on this replica, though lookups are cached", async () => {
    const orgId = t.tenant.organization_id;
    const member = await t.admin.addMember({ orgId, email: "cache@example.com", role: "org:member" });
    const key = (await t.admin.createKey({ orgId, memberId: member.id })).key;
    expect((await post(prompt, key, "late")).body.error.metadata.reason).toBe("not_found");
    await t.admin.addIntern({ orgId, id: "late", endpoint: "http://127.0.0.1:9", token: "secret", state: "suspended" });
    expect((await post(prompt, key, "late")).body.error.metadata.reason).toBe("intern_not_ready");
    await t.admin.setInternState({ orgId, id: "late", state: "running" });
    expect((await post(prompt, key, "late")).body.error.metadata.reason).toBe("intern_unreachable");
    await t.admin.setInternState({ id: "late", state: "suspended" });
    expect((await post(prompt, key, "late")).body.error.metadata.reason).toBe("intern_not_ready");
  });

  it("502 intern_unreachable when the host is down, then 429 rate_limited with Retry-After", async () => {
    // A member of its own, so no other test's turns count.
    const member = await t.admin.addMember({ orgId: t.tenant.organization_id, email: "limited@example.com", role: "org:member" });
    const key = (await t.admin.createKey({ orgId: t.tenant.organization_id, memberId: member.id })).key;
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await post(prompt, key);
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 3)).toEqual([502, 502, 502]);
    expect(last!.status).toBe(429);
    expect(last!.body.error.metadata).toEqual({ reason: "rate_limited", retryable: true });
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("gives gRPC callers the same refusals as a status with the error detail", async () => {
    const client = createClient(InternChatService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const error = await (async () => {
      for await (const _ of client.createChatCompletion({ internId: "asleep", stream: true, messages: [{ role: "user", content: { kind: { case: "stringValue", value: "x" } } }] }));
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((error as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 409, reason: "intern_not_ready" });
  });
});

describe("chat refusals over gRPC", () => {
  const refusalOf = async (key: string | undefined, internId = "unreachable") => {
    const client = createClient(InternChatService, grpcTransportFor(t.grpcUrl, key));
    return (async () => {
      for await (const _ of client.createChatCompletion({ internId, stream: true, messages: [{ role: "user", content: { kind: { case: "stringValue", value: "x" } } }] }));
    })().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  };

  it.each([
    ["no key", () => undefined, Code.Unauthenticated, 401, ""],
    ["outside the programme", () => outsiderKey, Code.NotFound, 404, ""],
    ["departed creator", () => departedKey, Code.PermissionDenied, 403, ""],
  ])("%s: the same status and detail as over HTTP", async (_name, key, code, status, reason) => {
    const error = await refusalOf(key());
    expect(error?.code).toBe(code);
    expect(error?.findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: status, reason });
  });

  it("bad_request and not_found carry their reasons", async () => {
    const client = createClient(InternChatService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    const invalid = await (async () => {
      for await (const _ of client.createChatCompletion({ internId: "unreachable", messages: [] }));
    })().catch((e: unknown) => ConnectError.from(e));
    expect((invalid as ConnectError).findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 400, reason: "bad_request" });
    const missing = await refusalOf(t.tenant.api_key, "nobody");
    expect(missing?.findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 404, reason: "not_found" });
  });

  it("a huge intern id is not_found with its detail, the id repeated only in part", async () => {
    const missing = await refusalOf(t.tenant.api_key, "i".repeat(200_000));
    expect(missing?.findDetails(ErrorDetailSchema)[0]).toMatchObject({ httpStatus: 404, reason: "not_found" });
    expect(missing?.rawMessage).toBe(`Intern ${"i".repeat(128)}… not found.`);
  });
});

describe("bridge framing", () => {
  it("answers an unknown /api/v1 path with the 404 envelope", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/nothing/here`);
    expect(response.status).toBe(404);
    expect((await response.json()).error).toMatchObject({ code: 404, metadata: { reason: "not_found" } });
  });
});

describe("chat body members", () => {
  let h: ChatHarness;
  beforeAll(async () => {
    h = await startChatHarness();
  });
  afterAll(() => h?.close());

  it("takes members by their wire names only: camelCase sessionId and internId are ignored", async () => {
    const sessionId = finalOf(await h.chat(promptBody("say one"))).session_id;
    const aliased = await h.chat(promptBody("say two", { sessionId }));
    expect(aliased.status).toBe(200);
    expect(finalOf(aliased).session_id).not.toBe(sessionId);
    // Not a second intern_id next to the one from the path.
    const pathWins = await h.chat(promptBody("say three", { internId: "nobody" }));
    expect([pathWins.status, contentOf(pathWins)]).toEqual([200, "three"]);
  });
});

describe("chat rate limit", () => {
  let h: ChatHarness;
  beforeAll(async () => {
    h = await startChatHarness({ env: { CHAT_TURNS_PER_MINUTE: "2" } });
  });
  afterAll(() => h?.close());

  it("counts turns, not requests the host refused before any turn ran", async () => {
    const asked = await h.chat(promptBody("permission Deploy allow_once,reject_once", { approval_mode: "manual" }));
    const sessionId = finalOf(asked).session_id;
    const call = toolCallOf(asked);
    for (let i = 0; i < 4; i++) {
      const unknown = await h.chat(answerBody(sessionId, { ...call, id: `no-such-question-${i}` }, "allow_once"));
      expect([unknown.status, unknown.refusal.error.metadata.reason]).toEqual([404, "interaction_unknown"]);
      const refused = await h.chat(answerBody(sessionId, call, "allow_always"));
      expect([refused.status, refused.refusal.error.metadata.reason]).toEqual([400, "bad_request"]);
      const busy = await h.chat(promptBody("say again", { session_id: sessionId }));
      expect([busy.status, busy.refusal.error.metadata.reason]).toEqual([409, "busy"]);
    }
    // The answer is the second turn; a third is over the limit.
    expect(contentOf(await h.chat(answerBody(sessionId, call, "allow_once")))).toBe("permission=allow_once-first");
    const limited = await h.chat(promptBody("say too many"));
    expect([limited.status, limited.refusal.error.metadata.reason]).toEqual([429, "rate_limited"]);
  });
});
