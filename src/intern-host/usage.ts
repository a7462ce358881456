import { create } from "@bufbuild/protobuf";
import type { Usage } from "@agentclientprotocol/sdk/unstable";
import { ChatUsageSchema, type ChatUsage } from "../gen/switchboard/v1/chat_pb.js";

/**
 * Maps the agent's `PromptResponse.usage` to the public usage (DESIGN §4):
 * input plus cache reads plus cache writes are the prompt tokens, output
 * tokens the completion tokens, cache reads the cached tokens. `costUsd` is the
 * change of the session's `usage_update` cost over the run, when known.
 * Without token counts there is no usage: a cost alone is not reported as a
 * usage of zero tokens.
 */
export function mapUsage(usage: Usage | null | undefined, costUsd: number | undefined): ChatUsage | undefined {
  if (!usage) return undefined;
  const cacheReads = usage.cachedReadTokens ?? undefined;
  const promptTokens = BigInt(usage.inputTokens + (cacheReads ?? 0) + (usage.cachedWriteTokens ?? 0));
  const completionTokens = BigInt(usage.outputTokens);
  return create(ChatUsageSchema, {
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
    cost: costUsd,
    promptTokensDetails: cacheReads === undefined ? undefined : { cachedTokens: BigInt(cacheReads) },
  });
}
