import type { ChatCompletionChunk, ChatToolCall, ChatUsage } from "../gen/switchboard/v1/chat_pb.js";

function toolCallJson(call: ChatToolCall) {
  return { id: call.id, index: call.index ?? 0, type: call.type, function: { name: call.function?.name ?? "", arguments: call.function?.arguments ?? "" } };
}

function usageJson(usage: ChatUsage) {
  return {
    completion_tokens: Number(usage.completionTokens),
    prompt_tokens: Number(usage.promptTokens),
    total_tokens: Number(usage.totalTokens),
    ...(usage.cost !== undefined ? { cost: usage.cost } : {}),
    ...(usage.promptTokensDetails ? { prompt_tokens_details: { cached_tokens: Number(usage.promptTokensDetails.cachedTokens) } } : {}),
  };
}

/**
 * The JSON of one `chat.completion.chunk`: absent optional members are
 * omitted, except where the spec wants null (`finish_reason` while streaming,
 * `session_id` and `usage` on the final chunk).
 */
export function chatChunkJson(chunk: ChatCompletionChunk): object {
  return {
    id: chunk.id,
    object: chunk.object,
    created: Number(chunk.created),
    model: chunk.model,
    choices: chunk.choices.map((choice) => ({
      index: choice.index,
      delta: {
        ...(choice.delta?.role !== undefined ? { role: choice.delta.role } : {}),
        ...(choice.delta?.content !== undefined ? { content: choice.delta.content } : {}),
        ...(choice.delta?.reasoning !== undefined ? { reasoning: choice.delta.reasoning } : {}),
        ...(choice.delta?.toolCalls.length ? { tool_calls: choice.delta.toolCalls.map(toolCallJson) } : {}),
      },
      finish_reason: choice.finishReason ?? null,
    })),
    ...(chunk.error
      ? { error: { code: chunk.error.code, message: chunk.error.message, metadata: { reason: chunk.error.metadata?.reason ?? "", retryable: chunk.error.metadata?.retryable ?? false } } }
      : {}),
    ...(chunk.final ? { session_id: chunk.sessionId ?? null, usage: chunk.usage ? usageJson(chunk.usage) : null } : {}),
  };
}
