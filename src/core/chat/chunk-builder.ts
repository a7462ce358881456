import { create } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  ChatChoiceSchema,
  ChatCompletionChunkSchema,
  ChatDeltaSchema,
  type ChatCompletionChunk,
  type ChatUsage,
} from "../../gen/switchboard/v1/chat_pb.js";
import type { PublicError } from "../error-catalogue.js";

/** Options for {@link createChunkBuilder}. */
export interface ChunkBuilderOptions {
  /** The request's `model`, else `<namespace>/intern`. */
  model: string;
  /** `<namespace>.provide_input`. */
  toolName: string;
}

/**
 * Builds the chunks of one response: a constant id, `created` and model,
 * and the spec's chunk kinds. Pure: it writes nothing.
 */
export function createChunkBuilder(options: ChunkBuilderOptions) {
  // randomUUID draws from a cached entropy pool; randomBytes costs a syscall per id.
  const id = `chatcmpl-${randomUUID().replaceAll("-", "")}`;
  const created = BigInt(Math.floor(Date.now() / 1000));
  let toolCallIndex = 0;
  const chunk = (init: MessageInitShape<typeof ChatCompletionChunkSchema>, model = options.model): ChatCompletionChunk =>
    create(ChatCompletionChunkSchema, { ...init, id, object: "chat.completion.chunk", created, model });
  const delta = (value: MessageInitShape<typeof ChatDeltaSchema>, finishReason?: string) =>
    chunk({ choices: [{ index: 0, delta: value, finishReason }] });
  // Content and reasoning are nearly every chunk of a response: they are
  // shallow copies of zero messages made once, since create() walks the
  // schema of every nested message each time (4.0 against 1.3 µs a chunk in
  // isolation). Each chunk gets fresh arrays.
  const chunkTemplate = chunk({});
  const choiceTemplate = create(ChatChoiceSchema, { index: 0 });
  const deltaTemplate = create(ChatDeltaSchema);
  const textChunk = (text: { content: string } | { reasoning: string }): ChatCompletionChunk => ({
    ...chunkTemplate,
    choices: [{ ...choiceTemplate, delta: { ...deltaTemplate, toolCalls: [], ...text } }],
  });
  return {
    role: () => delta({ role: "assistant" }),
    content: (text: string) => textChunk({ content: text }),
    reasoning: (text: string) => textChunk({ reasoning: text }),
    /** One complete tool call entry for an interaction. */
    interaction: (interactionId: string, argumentsJson: string) =>
      delta({ toolCalls: [{ id: interactionId, index: toolCallIndex++, type: "function", function: { name: options.toolName, arguments: argumentsJson } }] }),
    finish: (reason: "stop" | "tool_calls") => delta({}, reason),
    error: (error: PublicError) =>
      chunk({
        choices: [{ index: 0, delta: {}, finishReason: "error" }],
        error: { code: error.status, message: error.message, metadata: { reason: error.reason, retryable: error.retryable } },
      }),
    /** The empty-choices chunk that ends every response. */
    final: (sessionId: string | undefined, usage: ChatUsage | undefined, reportedModel?: string) =>
      chunk({ choices: [], final: true, sessionId, usage }, reportedModel || options.model),
  };
}

/** A chunk builder. */
export type ChunkBuilder = ReturnType<typeof createChunkBuilder>;
