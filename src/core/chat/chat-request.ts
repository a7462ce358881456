import type { Value } from "@bufbuild/protobuf/wkt";
import type { ChatMessage, CreateChatCompletionRequest } from "../../gen/switchboard/v1/chat_pb.js";
import { catalogueError } from "../error-catalogue.js";
import { characterCount } from "../text-rules.js";

/** Chat route limits from the spec. */
export const chatLimits = { promptChars: 32_000, idChars: 256, toolCallIdChars: 128 } as const;

/** The two approval modes; `self-drive` is the default. */
export type ApprovalMode = "manual" | "self-drive";

/** A validated chat request: a new prompt, or the answer to an interaction. */
export type ChatTurn =
  | { kind: "prompt"; internId: string; prompt: string; approvalMode: ApprovalMode; model?: string; sessionId?: string }
  | { kind: "answer"; internId: string; sessionId: string; toolCallId: string; answer: string; model?: string };

const roles = new Set(["system", "developer", "user", "assistant", "tool"]);

function invalid(message: string): never {
  throw catalogueError("bad_request", message);
}

function checkLength(value: string | undefined, name: string, max: number): void {
  if (value !== undefined && (value.length < 1 || characterCount(value, max) > max)) invalid(`${name} must be 1 to ${max} characters.`);
}

/**
 * The text of a message's content: a string, or text parts joined. Returns
 * undefined for null; refuses anything else.
 */
function contentText(content: Value | undefined, where: string): string | undefined {
  const kind = content?.kind;
  if (!kind || kind.case === undefined) invalid(`${where}.content is required.`);
  if (kind.case === "nullValue") return undefined;
  if (kind.case === "stringValue") return kind.value;
  if (kind.case === "listValue") {
    return kind.value.values
      .map((part, i) => {
        const fields = part.kind.case === "structValue" ? part.kind.value.fields : undefined;
        const type = fields?.type?.kind;
        const text = fields?.text?.kind;
        if (type?.case !== "stringValue" || type.value !== "text" || text?.case !== "stringValue") {
          invalid(`${where}.content[${i}] must be a text part {"type":"text","text":string}.`);
        }
        return text.value;
      })
      .join("");
  }
  invalid(`${where}.content must be a string, an array of text parts, or null.`);
}

function checkMessage(message: ChatMessage, where: string): void {
  if (!roles.has(message.role)) invalid(`${where}.role must be one of system, developer, user, assistant, tool.`);
  const text = contentText(message.content, where);
  if (text === undefined && message.role !== "assistant") invalid(`${where}.content may be null only for role assistant.`);
  message.toolCalls.forEach((call, i) => {
    const at = `${where}.tool_calls[${i}]`;
    if (message.role !== "assistant") invalid(`${at}: only assistant messages carry tool_calls.`);
    checkLength(call.id, `${at}.id`, chatLimits.toolCallIdChars);
    // Proto3 strings cannot tell missing from empty, and a streamed call never has either empty.
    if (!call.function || call.function.name === "" || call.function.arguments === "") invalid(`${at}.function is required, with name and arguments strings as streamed.`);
  });
  if (message.role === "tool") {
    if (message.toolCallId === undefined) invalid(`${where}.tool_call_id is required for role tool.`);
    checkLength(message.toolCallId, `${where}.tool_call_id`, chatLimits.toolCallIdChars);
  }
}

/**
 * Validates a chat request exactly as the spec's request tables say and
 * turns it into the turn to run. Only the last message is acted on; the
 * others are checked for shape so malformed history is refused, not ignored.
 */
export function parseChatTurn(request: CreateChatCompletionRequest): ChatTurn {
  if (!request.internId) invalid("intern_id is required.");
  if (request.stream !== true) invalid("stream must be true: this endpoint only streams.");
  if (request.messages.length === 0) invalid("messages must have at least 1 item.");
  request.messages.forEach((message, i) => checkMessage(message, `messages[${i}]`));
  checkLength(request.model, "model", chatLimits.idChars);
  checkLength(request.sessionId, "session_id", chatLimits.idChars);
  if (request.approvalMode !== undefined && request.approvalMode !== "manual" && request.approvalMode !== "self-drive") {
    invalid("approval_mode must be manual or self-drive.");
  }
  const last = request.messages[request.messages.length - 1];
  const text = contentText(last.content, `messages[${request.messages.length - 1}]`) ?? "";
  if (last.role === "user") {
    if (text.length === 0) invalid("The user prompt is empty.");
    if (characterCount(text, chatLimits.promptChars) > chatLimits.promptChars) invalid(`The user prompt exceeds ${chatLimits.promptChars} characters.`);
    return {
      kind: "prompt",
      internId: request.internId,
      prompt: text,
      approvalMode: (request.approvalMode as ApprovalMode | undefined) ?? "self-drive",
      model: request.model,
      sessionId: request.sessionId,
    };
  }
  if (last.role === "tool") {
    if (request.sessionId === undefined) invalid("session_id is required when the last message has role tool.");
    return { kind: "answer", internId: request.internId, sessionId: request.sessionId, toolCallId: last.toolCallId!, answer: text.trim(), model: request.model };
  }
  invalid("The last message must have role user (a new prompt) or tool (an answer).");
}
