import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createChunkBuilder } from "../../src/core/chat/chunk-builder.js";
import { ChatCompletionChunkSchema } from "../../src/gen/switchboard/v1/chat_pb.js";

describe("chunk builder", () => {
  const chunks = createChunkBuilder({ model: "service/intern", toolName: "service.provide_input" });
  const role = chunks.role();
  const expected = (delta: { content?: string; reasoning?: string }) =>
    create(ChatCompletionChunkSchema, { id: role.id, object: "chat.completion.chunk", created: role.created, model: "service/intern", choices: [{ index: 0, delta }] });

  it("builds content and reasoning chunks equal to what create() builds, through the binary round trip too", () => {
    for (const [chunk, delta] of [
      [chunks.content("hello"), { content: "hello" }],
      [chunks.reasoning("hmm"), { reasoning: "hmm" }],
      [chunks.content(""), { content: "" }],
    ] as const) {
      expect(equals(ChatCompletionChunkSchema, chunk, expected(delta))).toBe(true);
      expect(equals(ChatCompletionChunkSchema, fromBinary(ChatCompletionChunkSchema, toBinary(ChatCompletionChunkSchema, chunk)), expected(delta))).toBe(true);
      expect(chunk.choices[0].delta?.role).toBeUndefined();
      expect(chunk.choices[0].finishReason).toBeUndefined();
    }
  });

  it("gives every chunk arrays of its own", () => {
    const first = chunks.content("a");
    const second = chunks.content("b");
    expect(first.choices).not.toBe(second.choices);
    expect(first.choices[0].delta?.toolCalls).not.toBe(second.choices[0].delta?.toolCalls);
    expect(second.choices[0].delta?.content).toBe("b");
    expect(first.choices[0].delta?.content).toBe("a");
  });

  it("keeps one id, created and model across the response", () => {
    const final = chunks.final("sess_1", undefined);
    for (const chunk of [chunks.content("x"), chunks.reasoning("y"), chunks.finish("stop"), final]) {
      expect([chunk.id, chunk.created, chunk.model]).toEqual([role.id, role.created, "service/intern"]);
    }
    expect(role.id).toMatch(/^chatcmpl-/);
    expect(final).toMatchObject({ choices: [], final: true, sessionId: "sess_1" });
  });
});
