import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { answerBody, contentOf, finalOf, finishOf, promptBody, startChatHarness, toolCallOf, type ChatHarness } from "./support/chat-harness.js";

let h: ChatHarness;
const scratch = mkdtempSync(join(tmpdir(), "switchboard-chat-"));

beforeAll(async () => {
  h = await startChatHarness({ env: { HEARTBEAT_MS: "150" }, agentFlags: ["--model", "scripted-model-1"] });
});
afterAll(() => h?.close());

describe("chat stream", () => {
  it("streams role, reasoning and content, one stop, then the final chunk with session_id and usage, then [DONE]", async () => {
    const result = await h.chat(promptBody("think planning\nsay Hello, \nsay world\nusage 100 20 30 5\ncost 0.25"));
    expect(result.status).toBe(200);
    expect(result.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(result.done).toBe(true);
    const [role, ...rest] = result.chunks;
    expect(role.choices[0].delta).toEqual({ role: "assistant" });
    expect(role.choices[0].finish_reason).toBeNull();
    expect(rest.some((c) => c.choices[0]?.delta?.reasoning === "planning")).toBe(true);
    expect(contentOf(result)).toBe("Hello, world");
    expect(finishOf(result).choices[0]).toEqual({ index: 0, delta: {}, finish_reason: "stop" });
    const final = finalOf(result);
    expect(final.choices).toEqual([]);
    expect(final.session_id).toEqual(expect.any(String));
    expect(final.usage).toEqual({ prompt_tokens: 135, completion_tokens: 20, total_tokens: 155, cost: 0.25, prompt_tokens_details: { cached_tokens: 30 } });
    for (const chunk of result.chunks) {
      expect(chunk.id).toBe(role.id);
      expect(chunk.object).toBe("chat.completion.chunk");
      expect(Number.isInteger(chunk.created)).toBe(true);
    }
    expect(role.id).toMatch(/^chatcmpl-/);
    expect(role.model).toBe("service/intern");
    expect(final.model).toBe("scripted-model-1");
  });

  it("echoes the request model on chunks", async () => {
    const result = await h.chat(promptBody("say hi", { model: "my-model" }));
    expect(result.chunks[0].model).toBe("my-model");
  });

  it("gives usage null when the intern reported none", async () => {
    const result = await h.chat(promptBody("say plain"));
    expect(finalOf(result).usage).toBeNull();
  });

  it("continues a session: same session_id, same agent session", async () => {
    const first = await h.chat(promptBody("say one"));
    const sessionId = finalOf(first).session_id;
    const second = await h.chat(promptBody("report-session", { session_id: sessionId }));
    expect(finalOf(second).session_id).toBe(sessionId);
    expect(contentOf(second)).toContain(`session=${sessionId}`);
  });

  it("sends `: keepalive` while a tool run is silent", async () => {
    const result = await h.chat(promptBody("tool t1 Build\nsleep 700\nsay done"));
    expect(result.keepalives).toBeGreaterThanOrEqual(2);
    expect(contentOf(result)).toBe("done");
  });

  it("sends no keepalive while output keeps coming, each chunk restarting the silence", async () => {
    // Every gap is shorter than the 150 ms heartbeat, the whole turn far longer.
    const steps = Array.from({ length: 6 }, (_, index) => `say ${index}\nsleep 80`).join("\n");
    const result = await h.chat(promptBody(steps));
    expect(contentOf(result)).toBe("012345");
    expect(result.keepalives).toBe(0);
  });

  it("refuses a second turn in a busy session with 409 busy and Retry-After", async () => {
    const gate = join(scratch, "busy-gate");
    const first = await h.chat(promptBody("say x"));
    const sessionId = finalOf(first).session_id;
    const running = h.chat(promptBody(`wait ${gate}\nsay released`, { session_id: sessionId }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const busy = await h.chat(promptBody("say again", { session_id: sessionId }));
    writeFileSync(gate, "");
    expect(busy.status).toBe(409);
    expect(busy.refusal.error.metadata).toEqual({ reason: "busy", retryable: true });
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(contentOf(await running)).toBe("released");
  });

  it("reports a failed turn in-stream as turn_failed, then the final chunk and [DONE]", async () => {
    const result = await h.chat(promptBody("say partial\nerror exploded"));
    expect(result.status).toBe(200);
    const finish = finishOf(result);
    expect(finish.choices[0].finish_reason).toBe("error");
    expect(finish.error).toMatchObject({ code: 502, metadata: { reason: "turn_failed" } });
    expect(finalOf(result).choices).toEqual([]);
    expect(result.done).toBe(true);
  });

  it("cancels the run when the caller disconnects while it streams", async () => {
    const controller = new AbortController();
    const first = await h.chat(promptBody("say x"));
    const sessionId = finalOf(first).session_id;
    const response = await h.open(promptBody("say started\nsleep 60000", { session_id: sessionId }), { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    // The turn sleeps a minute unless cancelled: the session is free again
    // only because the host cancelled the run.
    let next;
    for (let attempt = 0; attempt < 50; attempt++) {
      next = await h.chat(promptBody("say free", { session_id: sessionId }));
      if (next.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(next!.status).toBe(200);
  });
});

describe("interactions", () => {
  it("pauses on a permission request in manual mode and continues the same run on the answer", async () => {
    const asked = await h.chat(promptBody("say before\npermission Run-tests allow_once,reject_once\nsay after", { approval_mode: "manual" }));
    const call = toolCallOf(asked);
    expect(call).toMatchObject({ id: expect.any(String), index: 0, type: "function", function: { name: "service.provide_input" } });
    expect(call.id.length).toBeLessThanOrEqual(128);
    expect(JSON.parse(call.function.arguments)).toEqual({ kind: "permission", operation: "Run-tests", options: ["allow_once", "reject_once"] });
    expect(finishOf(asked).choices[0].finish_reason).toBe("tool_calls");
    const final = finalOf(asked);
    expect(final.usage).toBeNull();
    expect(final.session_id).toEqual(expect.any(String));
    expect(asked.done).toBe(true);

    const answered = await h.chat(answerBody(final.session_id, call, "allow_once"));
    expect(answered.status).toBe(200);
    expect(answered.chunks[0].choices[0].delta).toEqual({ role: "assistant" });
    expect(contentOf(answered)).toBe("permission=allow_once-firstafter");
    expect(finishOf(answered).choices[0].finish_reason).toBe("stop");
    expect(finalOf(answered).session_id).toBe(final.session_id);

    const again = await h.chat(answerBody(final.session_id, call, "allow_once"));
    expect(again.status).toBe(409);
    expect(again.refusal.error.metadata.reason).toBe("interaction_not_pending");
  });

  it("refuses an option that was not offered with 400, keeping the question pending", async () => {
    const asked = await h.chat(promptBody("permission Deploy allow_once,reject_once", { approval_mode: "manual" }));
    const call = toolCallOf(asked);
    const sessionId = finalOf(asked).session_id;
    const refused = await h.chat(answerBody(sessionId, call, "allow_always"));
    expect(refused.status).toBe(400);
    expect(refused.refusal.error.metadata.reason).toBe("bad_request");
    const answered = await h.chat(answerBody(sessionId, call, "reject_once"));
    expect(contentOf(answered)).toBe("permission=reject_once-first");
  });

  it("404 interaction_unknown for an id this session never asked", async () => {
    const asked = await h.chat(promptBody("permission X", { approval_mode: "manual" }));
    const sessionId = finalOf(asked).session_id;
    const result = await h.chat(answerBody(sessionId, { id: "no-such-question", function: { name: "service.provide_input", arguments: "{}" } }, "allow_once"));
    expect(result.status).toBe(404);
    expect(result.refusal.error.metadata.reason).toBe("interaction_unknown");
    await h.chat(answerBody(sessionId, toolCallOf(asked), "cancel"));
  });

  it("ends the run with 410 run_ended when the answer is cancel", async () => {
    const asked = await h.chat(promptBody("permission Y\nsay never", { approval_mode: "manual" }));
    const result = await h.chat(answerBody(finalOf(asked).session_id, toolCallOf(asked), "cancel"));
    expect(result.status).toBe(200);
    expect(finishOf(result).error).toMatchObject({ code: 410, metadata: { reason: "run_ended", retryable: false } });
    expect(contentOf(result)).not.toContain("never");
    expect(result.done).toBe(true);
  });

  it("asks an elicitation and validates the answer against its schema", async () => {
    const schema = JSON.stringify({ type: "object", properties: { colour: { type: "string", enum: ["red", "blue"] } }, required: ["colour"] });
    const asked = await h.chat(promptBody(`elicit ${schema}`));
    const call = toolCallOf(asked);
    const args = JSON.parse(call.function.arguments);
    expect(args).toMatchObject({ kind: "elicitation", message: expect.any(String), fields: [{ name: "colour", type: "string", required: true, options: ["red", "blue"] }] });
    const sessionId = finalOf(asked).session_id;
    const wrong = await h.chat(answerBody(sessionId, call, JSON.stringify({ action: "accept", content: { colour: "green" } })));
    expect(wrong.status).toBe(400);
    const right = await h.chat(answerBody(sessionId, call, JSON.stringify({ action: "accept", content: { colour: "blue" } })));
    expect(contentOf(right)).toContain('"colour":"blue"');
  });

  it("self-drive answers permission requests itself; the mode is not remembered by the session", async () => {
    const selfDriven = await h.chat(promptBody("report-mode\npermission Z"));
    expect(toolCallOf(selfDriven)).toBeUndefined();
    expect(contentOf(selfDriven)).toBe("mode=bypassPermissionspermission=allow_once-first");
    const sessionId = finalOf(selfDriven).session_id;
    const manual = await h.chat(promptBody("report-mode", { session_id: sessionId, approval_mode: "manual" }));
    expect(contentOf(manual)).toBe("mode=default");
    const back = await h.chat(promptBody("report-mode", { session_id: sessionId }));
    expect(contentOf(back)).toBe("mode=bypassPermissions");
  });
});
