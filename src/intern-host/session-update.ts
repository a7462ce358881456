import { RequestError, type SessionConfigOption } from "@agentclientprotocol/sdk/unstable";

/** The part of one `session/update` the host acts on. */
export type HostUpdate =
  | { kind: "content" | "reasoning"; text: string }
  | { kind: "tool_call"; toolCallId: string; title: string; status: string }
  | { kind: "tool_call_update"; toolCallId: string; title: string | undefined; status: string }
  | { kind: "mode"; currentModeId: string }
  | { kind: "model"; model: string | undefined }
  | { kind: "cost"; usd: number }
  | { kind: "ignored" };

/** A `session/update` notification as the host reads it. */
export interface HostSessionNotification {
  sessionId: string;
  update: HostUpdate;
}

/**
 * Reads a `session/update` by hand instead of through the SDK's full schema:
 * it is the one message an agent streams by the thousand, and validating
 * every variant costed a fifth of the host's CPU per chunk. Only the fields
 * the host uses are checked; an unknown or non-text update is `ignored`, so a
 * newer agent's additions pass harmlessly.
 */
export function readSessionNotification(params: unknown): HostSessionNotification {
  if (!isRecord(params) || typeof params.sessionId !== "string" || !isRecord(params.update)) {
    throw RequestError.invalidParams(undefined, "session/update needs a sessionId and an update.");
  }
  return { sessionId: params.sessionId, update: readUpdate(params.update) };
}

function readUpdate(update: Record<string, unknown>): HostUpdate {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk": {
      const content = update.content;
      if (!isRecord(content) || content.type !== "text" || typeof content.text !== "string") return { kind: "ignored" };
      return { kind: update.sessionUpdate === "agent_message_chunk" ? "content" : "reasoning", text: content.text };
    }
    case "tool_call":
      if (typeof update.toolCallId !== "string") return { kind: "ignored" };
      return { kind: "tool_call", toolCallId: update.toolCallId, title: stringOr(update.title, ""), status: stringOr(update.status, "pending") };
    case "tool_call_update":
      if (typeof update.toolCallId !== "string") return { kind: "ignored" };
      return { kind: "tool_call_update", toolCallId: update.toolCallId, title: typeof update.title === "string" ? update.title : undefined, status: stringOr(update.status, "") };
    case "current_mode_update":
      return typeof update.currentModeId === "string" ? { kind: "mode", currentModeId: update.currentModeId } : { kind: "ignored" };
    case "config_option_update":
      return { kind: "model", model: reportedModel(Array.isArray(update.configOptions) ? update.configOptions : undefined) };
    case "usage_update": {
      const cost = update.cost;
      return isRecord(cost) && cost.currency === "USD" && typeof cost.amount === "number" ? { kind: "cost", usd: cost.amount } : { kind: "ignored" };
    }
    default:
      return { kind: "ignored" };
  }
}

/** The model an agent reports: the current value of its config option of category `model`. */
export function reportedModel(configOptions: readonly unknown[] | null | undefined): string | undefined {
  const option = (configOptions as SessionConfigOption[] | null | undefined)?.find((candidate) => isRecord(candidate) && candidate.category === "model" && candidate.type === "select");
  return option && "currentValue" in option && typeof option.currentValue === "string" ? option.currentValue : undefined;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
