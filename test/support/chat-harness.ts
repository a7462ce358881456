import { createParser } from "eventsource-parser";
import { startInternHost, type InternHostOptions, type RunningInternHost } from "../../src/intern-host/intern-host.js";
import { scriptedAgentCommand } from "./scripted-agent-command.js";
import { startTestServer, type TestServer } from "./test-server.js";

/** A chat response as a client sees it: refusal envelope, or chunks, keepalives and [DONE]. */
export interface ChatResult {
  status: number;
  headers: Headers;
  /** The JSON envelope of a refusal. */
  refusal?: any;
  chunks: any[];
  keepalives: number;
  done: boolean;
}

/** Reads a whole response: SSE events until the end, or the refusal body. */
export async function readChat(response: Response): Promise<ChatResult> {
  const result: ChatResult = { status: response.status, headers: response.headers, chunks: [], keepalives: 0, done: false };
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
    result.refusal = await response.json();
    return result;
  }
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") result.done = true;
      else result.chunks.push(JSON.parse(event.data));
    },
    onComment(comment) {
      if (comment.trim() === "keepalive") result.keepalives++;
    },
  });
  const decoder = new TextDecoder();
  for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(piece, { stream: true }));
  return result;
}

/** The text a response streamed as content. */
export const contentOf = (result: ChatResult) => result.chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("");

/** The final (empty-choices) chunk. */
export const finalOf = (result: ChatResult) => result.chunks[result.chunks.length - 1];

/** The finish chunk (the one before the final chunk). */
export const finishOf = (result: ChatResult) => result.chunks[result.chunks.length - 2];

/** The interaction tool call of a `tool_calls` response. */
export const toolCallOf = (result: ChatResult) => result.chunks.find((chunk) => chunk.choices[0]?.delta?.tool_calls)?.choices[0].delta.tool_calls[0];

/** A gateway with one intern served by a real host in front of the scripted ACP agent. */
export interface ChatHarness {
  t: TestServer;
  host: RunningInternHost;
  internId: string;
  /** POSTs a chat body and reads the whole response. */
  chat(body: object, options?: { key?: string; signal?: AbortSignal; internId?: string }): Promise<ChatResult>;
  /** Starts a chat and returns the raw response (for disconnect tests). */
  open(body: object, options?: { key?: string; signal?: AbortSignal; internId?: string }): Promise<Response>;
  close(): Promise<void>;
}

/** The body that answers an interaction, echoing its tool call as the spec asks. */
export function answerBody(sessionId: string, toolCall: any, answer: string, extra: object = {}) {
  return {
    stream: true,
    session_id: sessionId,
    messages: [
      { role: "assistant", content: null, tool_calls: [{ id: toolCall.id, type: "function", function: toolCall.function }] },
      { role: "tool", tool_call_id: toolCall.id, content: answer },
    ],
    ...extra,
  };
}

/** A prompt body (one user message). */
export const promptBody = (prompt: string, extra: object = {}) => ({ stream: true, messages: [{ role: "user", content: prompt }], ...extra });

/** Starts a server and a host with the scripted agent, registered as intern `scripted`. */
export async function startChatHarness(
  options: { env?: Record<string, string>; host?: Partial<InternHostOptions>; agentFlags?: string[]; logStream?: NodeJS.WritableStream } = {},
): Promise<ChatHarness> {
  const t = await startTestServer(options.env, {}, options.logStream);
  const token = "host-token-for-tests";
  const host = await startInternHost({ port: 0, token, agent: scriptedAgentCommand(...(options.agentFlags ?? [])), ...options.host });
  const internId = "scripted";
  await t.admin.addIntern({ orgId: t.tenant.organization_id, id: internId, endpoint: host.url, token, state: "running" });
  const open = (body: object, opts: { key?: string; signal?: AbortSignal; internId?: string } = {}) =>
    fetch(`${t.httpUrl}/api/v1/interns/${opts.internId ?? internId}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${opts.key ?? t.tenant.api_key}` },
      body: JSON.stringify(body),
      signal: opts.signal,
    });
  return {
    t,
    host,
    internId,
    open,
    chat: async (body, opts) => readChat(await open(body, opts)),
    async close() {
      await host.close();
      await t.close();
    },
  };
}
