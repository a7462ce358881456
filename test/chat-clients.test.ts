import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { OpenRouter } from "@openrouter/sdk";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { InternChatService } from "../src/gen/switchboard/v1/chat_pb.js";
import { ErrorDetailSchema } from "../src/gen/switchboard/v1/error_pb.js";
import { grpcTransportFor } from "./support/test-server.js";
import { startChatHarness, type ChatHarness } from "./support/chat-harness.js";

let h: ChatHarness;

beforeAll(async () => {
  // The OpenRouter SDK expects its own namespace on interaction tool calls.
  h = await startChatHarness({ env: { SWITCHBOARD_NAMESPACE: "openrouter" } });
});
afterAll(() => h?.close());

const text = (value: string) => ({ kind: { case: "stringValue" as const, value } });

describe("the openai package", () => {
  it("streams content, an interaction tool call, and session_id on the final chunk; the answer continues the run", async () => {
    const client = new OpenAI({ baseURL: `${h.t.httpUrl}/api/v1/interns/${h.internId}`, apiKey: h.t.tenant.api_key, maxRetries: 0 });
    // Switchboard's own members ride in the same body; the package passes them through.
    const prompt: OpenAI.Chat.ChatCompletionCreateParamsStreaming & { approval_mode: string } = {
      model: "gpt-intern",
      stream: true,
      messages: [{ role: "user", content: "say from openai\npermission Ship allow_once,reject_once\nsay shipped" }],
      approval_mode: "manual",
    };
    const stream = await client.chat.completions.create(prompt);
    let content = "";
    let toolCall: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall | undefined;
    let finish: string | null | undefined;
    let sessionId: string | undefined;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta?.content ?? "";
      toolCall ??= chunk.choices[0]?.delta?.tool_calls?.[0];
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.choices.length === 0) sessionId = (chunk as unknown as { session_id: string }).session_id;
      expect(chunk.model).toBe("gpt-intern");
    }
    expect(content).toBe("from openai");
    expect(finish).toBe("tool_calls");
    expect(toolCall?.function?.name).toBe("openrouter.provide_input");
    expect(sessionId).toEqual(expect.any(String));

    const reply: OpenAI.Chat.ChatCompletionCreateParamsStreaming & { session_id: string } = {
      model: "gpt-intern",
      stream: true,
      messages: [
        { role: "assistant", content: null, tool_calls: [{ id: toolCall!.id!, type: "function", function: { name: toolCall!.function!.name!, arguments: toolCall!.function!.arguments! } }] },
        { role: "tool", tool_call_id: toolCall!.id!, content: "allow_once" },
      ],
      session_id: sessionId!,
    };
    const answer = await client.chat.completions.create(reply);
    let rest = "";
    for await (const chunk of answer) rest += chunk.choices[0]?.delta?.content ?? "";
    expect(rest).toBe("permission=allow_once-firstshipped");
  });

  it("surfaces refusals as APIError with the status and envelope", async () => {
    const client = new OpenAI({ baseURL: `${h.t.httpUrl}/api/v1/interns/nobody`, apiKey: h.t.tenant.api_key, maxRetries: 0 });
    const error = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ code: 404, metadata: { reason: "not_found" } });
  });
});

describe("@openrouter/sdk interns.chat", () => {
  it("streams a turn, pauses on a question, and continues on the answer", async () => {
    const sdk = new OpenRouter({ apiKey: h.t.tenant.api_key, serverURL: `${h.t.httpUrl}/api/v1`, retryConfig: { strategy: "none" } });
    const first = await sdk.interns.chat({
      internId: h.internId,
      internChatCompletionRequest: { stream: true, approvalMode: "manual", messages: [{ role: "user", content: "say hi from openrouter\npermission Deploy allow_once" }] },
    });
    const chunks: any[] = [];
    for await (const chunk of first.result as AsyncIterable<any>) chunks.push(chunk);
    const call = chunks.find((chunk) => chunk.choices[0]?.delta?.toolCalls)?.choices[0].delta.toolCalls[0];
    expect(call.function.name).toBe("openrouter.provide_input");
    const final = chunks[chunks.length - 1];
    expect(final.sessionId).toEqual(expect.any(String));

    const second = await sdk.interns.chat({
      internId: h.internId,
      internChatCompletionRequest: {
        stream: true,
        sessionId: final.sessionId,
        messages: [
          { role: "assistant", content: null, toolCalls: [{ id: call.id, type: "function", function: call.function }] },
          { role: "tool", toolCallId: call.id, content: "allow_once" },
        ],
      } as any,
    });
    let content = "";
    for await (const chunk of second.result as AsyncIterable<any>) content += chunk.choices[0]?.delta?.content ?? "";
    expect(content).toBe("permission=allow_once-first");
  });
});

describe("gRPC callers", () => {
  it("get the same stream as messages: role, content, stop, final with session_id", async () => {
    const client = createClient(InternChatService, grpcTransportFor(h.t.grpcUrl, h.t.tenant.api_key));
    const events = [];
    for await (const response of client.createChatCompletion({ internId: h.internId, stream: true, messages: [{ role: "user", content: text("say over grpc") }] })) {
      events.push(response.event);
    }
    const chunks = events.filter((event) => event.case === "chunk").map((event) => event.value!);
    expect(chunks[0].choices[0].delta?.role).toBe("assistant");
    expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("")).toBe("over grpc");
    expect(chunks[chunks.length - 2].choices[0].finishReason).toBe("stop");
    expect(chunks[chunks.length - 1]).toMatchObject({ final: true, choices: [], sessionId: expect.any(String) });
  });

  /**
   * Calls the chat stream over the Connect protocol by hand with a deadline,
   * reading what the server itself ends the stream with (Connect's clients
   * enforce deadlines locally, which would hide it).
   */
  async function chatWithDeadline(prompt: string, timeoutMs: number) {
    const message = Buffer.from(JSON.stringify({ internId: h.internId, stream: true, messages: [{ role: "user", content: prompt }] }));
    const envelope = Buffer.alloc(5 + message.length);
    envelope.writeUInt32BE(message.length, 1);
    message.copy(envelope, 5);
    const response = await fetch(`${h.t.httpUrl}/switchboard.v1.InternChatService/CreateChatCompletion`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", "connect-timeout-ms": String(timeoutMs), authorization: `Bearer ${h.t.tenant.api_key}` },
      body: envelope,
    });
    const body = Buffer.from(await response.arrayBuffer());
    const frames: { end: boolean; json: any }[] = [];
    for (let at = 0; at < body.length; ) {
      const length = body.readUInt32BE(at + 1);
      frames.push({ end: (body[at] & 0x02) !== 0, json: JSON.parse(body.subarray(at + 5, at + 5 + length).toString()) });
      at += 5 + length;
    }
    const end = frames.find((frame) => frame.end)!.json;
    return { chunks: frames.filter((frame) => !frame.end).map((frame) => frame.json), error: end.error, detail: end.error?.details?.[0] };
  }

  it("whose deadline passes mid-run are told deadline_exceeded with the detail, not a clean end", async () => {
    const { chunks, error, detail } = await chatWithDeadline("say started\nsleep 5000\nsay late", 800);
    expect(chunks.some((chunk) => chunk.chunk?.choices?.[0]?.delta?.content === "started")).toBe(true);
    expect(error).toMatchObject({ code: "deadline_exceeded", message: "The call's deadline passed before the run ended." });
    expect(detail?.type).toBe("switchboard.v1.ErrorDetail");
  });

  it("whose deadline passes before the intern answers are told deadline_exceeded, not intern_rejected", async () => {
    const { chunks, error, detail } = await chatWithDeadline("sleep 5000", 500);
    expect(chunks).toEqual([]);
    expect(error).toMatchObject({ code: "deadline_exceeded", message: "The call's deadline passed before the intern answered." });
    expect(detail?.type).toBe("switchboard.v1.ErrorDetail");
  });

  it("get refusals from the host as a status with the error detail", async () => {
    const client = createClient(InternChatService, grpcTransportFor(h.t.grpcUrl, h.t.tenant.api_key));
    const error = await (async () => {
      for await (const _ of client.createChatCompletion({
        internId: h.internId,
        stream: true,
        sessionId: "no-such-session",
        messages: [{ role: "tool", toolCallId: "q1", content: text("allow_once") }],
      }));
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect([Code.NotFound]).toContain((error as ConnectError).code);
    expect((error as ConnectError).findDetails(ErrorDetailSchema)[0]?.reason).toMatch(/interaction_unknown|not_found/);
  });
});
