/**
 * A scripted ACP agent for the intern host's tests and bench, written with the
 * real SDK and run as a real process over stdio. What it advertises comes from
 * argv; what a turn does comes from the prompt, one directive per line:
 *
 *   say TEXT                       agent_message_chunk
 *   think TEXT                     agent_thought_chunk
 *   tool ID TITLE                  tool_call then tool_call_update (completed)
 *   report-mode                    says `mode=<current mode>`
 *   report-session                 says `session=<id> revived=<resume|load|no>`
 *   permission TITLE [KINDS]       asks permission (KINDS: comma list, default all four); says `permission=<optionId|cancelled>`
 *   permission-named NAME          asks permission for a tool call with a programmatic name and no title
 *   permissions N                  asks N permissions at once; says each outcome in order
 *   elicit JSON-SCHEMA             asks a form question; says `elicitation=<response JSON>`
 *   chatter-while-asking N SIZE [PATH]  asks permission, sends N chunks of SIZE characters while it waits, then creates PATH
 *   withdraw-when PATH             asks permission, withdraws it ($/cancel_request) once PATH exists; says `withdrawn`
 *   wait PATH                      waits until PATH exists (or the turn is cancelled)
 *   sleep MS                       waits MS milliseconds (or until the turn is cancelled)
 *   flood N [SIZE]                 N content chunks of SIZE characters (default 1)
 *   flood-timed N [GAP_MS]         N content chunks holding process.hrtime.bigint() (monotonic, shared by all processes) when written, GAP_MS apart (bench)
 *   cost USD                       usage_update with this cumulative session cost
 *   usage IN OUT [CACHE_READ CACHE_WRITE]   token usage of the prompt response
 *   stop REASON                    stop reason of the prompt response (default end_turn)
 *   crash                          exits the process at once (code 1)
 *   error MESSAGE                  fails the prompt with a JSON-RPC error
 *
 * argv: --modes a,b|none (default default,bypassPermissions) --resume --load
 * --refuse-new-session --ignore-cancel (session/cancel does nothing) --model NAME --crash-new-session-once MARKER_FILE (exits during the first
 * session/new of all its restarts, leaving MARKER_FILE so the next agent does not)
 */
import { existsSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import * as acp from "@agentclientprotocol/sdk/unstable";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string) => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};
const modeIds = (value("--modes") ?? "default,bypassPermissions").split(",").filter((id) => id !== "none");
const model = value("--model");

interface ScriptedSession {
  mode: string | undefined;
  revived: "resume" | "load" | "no";
  turn: AbortController | undefined;
}
const sessions = new Map<string, ScriptedSession>();
let nextSession = 1;

function sessionState(sessionId: string, revived: ScriptedSession["revived"]) {
  const session: ScriptedSession = { mode: modeIds[0], revived, turn: undefined };
  sessions.set(sessionId, session);
  return {
    modes: modeIds.length > 0 ? { currentModeId: modeIds[0], availableModes: modeIds.map((id) => ({ id, name: id })) } : undefined,
    configOptions: model ? [{ id: "model", name: "Model", category: "model", type: "select" as const, currentValue: model, options: [{ value: model, name: model }] }] : undefined,
  };
}

const allKinds: acp.PermissionOptionKind[] = ["allow_once", "allow_always", "reject_once", "reject_always"];

function permissionRequest(sessionId: string, title: string, kinds: acp.PermissionOptionKind[], toolCallId: string): acp.RequestPermissionRequest {
  // Two options per kind, so the host must pick the first of a kind.
  const options = kinds.flatMap((kind) => [
    { optionId: `${kind}-first`, name: `${kind} (first)`, kind },
    { optionId: `${kind}-second`, name: `${kind} (second)`, kind },
  ]);
  return { sessionId, toolCall: { toolCallId, title }, options };
}

function outcomeText(response: acp.RequestPermissionResponse): string {
  return response.outcome.outcome === "selected" ? response.outcome.optionId : "cancelled";
}

async function until(condition: () => boolean, signal: AbortSignal): Promise<void> {
  while (!condition() && !signal.aborted) await sleep(10);
}

async function runTurn(sessionId: string, prompt: string, client: acp.AgentContext, signal: AbortSignal): Promise<acp.PromptResponse> {
  const session = sessions.get(sessionId)!;
  const say = (text: string) => client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
  const think = (text: string) => client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "agent_thought_chunk", content: { type: "text", text } } });
  let stopReason: acp.StopReason = "end_turn";
  let usage: acp.Usage | undefined;
  let toolCalls = 0;

  for (const line of prompt.split("\n")) {
    if (signal.aborted) break;
    const trimmed = line.trimStart();
    const space = trimmed.indexOf(" ");
    const directive = space < 0 ? trimmed : trimmed.slice(0, space);
    const argument = space < 0 ? "" : trimmed.slice(space + 1);
    const rest = argument.split(" ").filter(Boolean);
    switch (directive) {
      case "say":
        await say(argument);
        break;
      case "think":
        await think(argument);
        break;
      case "tool": {
        const [id, ...title] = rest;
        await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call", toolCallId: id, title: title.join(" "), kind: "execute", status: "in_progress" } });
        await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call_update", toolCallId: id, status: "completed" } });
        break;
      }
      case "report-mode":
        await say(`mode=${session.mode ?? "none"}`);
        break;
      case "report-session":
        await say(`session=${sessionId} revived=${session.revived}`);
        break;
      case "permission": {
        const kinds = rest[1] ? (rest[1].split(",") as acp.PermissionOptionKind[]) : allKinds;
        const response = await client.request(acp.methods.client.session.requestPermission, permissionRequest(sessionId, rest[0] ?? "tool", kinds, `call-${++toolCalls}`));
        await say(`permission=${outcomeText(response)}`);
        break;
      }
      case "permission-named": {
        const toolCallId = `call-${++toolCalls}`;
        await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call", toolCallId, title: "Announced title", status: "pending" } });
        const response = await client.request(acp.methods.client.session.requestPermission, {
          sessionId,
          toolCall: { toolCallId, name: argument },
          options: [{ optionId: "yes", name: "Yes", kind: "allow_once" }],
        });
        await say(`permission=${outcomeText(response)}`);
        break;
      }
      case "permissions": {
        const count = Number(argument);
        const asked = Array.from({ length: count }, () => client.request(acp.methods.client.session.requestPermission, permissionRequest(sessionId, `parallel-${toolCalls + 1}`, allKinds, `call-${++toolCalls}`)));
        for (const response of await Promise.all(asked)) await say(`permission=${outcomeText(response)} `);
        break;
      }
      case "elicit": {
        const response = await client.request(acp.methods.client.elicitation.create, { sessionId, mode: "form", message: "Please answer", requestedSchema: JSON.parse(argument) });
        await say(`elicitation=${JSON.stringify(response)}`);
        break;
      }
      case "chatter-while-asking": {
        const [count, size] = rest.map(Number);
        const pending = client.request(acp.methods.client.session.requestPermission, permissionRequest(sessionId, "chatty", allKinds, `call-${++toolCalls}`));
        for (let i = 0; i < count; i++) await say(String(i % 10).repeat(size));
        if (rest[2]) writeFileSync(rest[2], "");
        await say(`permission=${outcomeText(await pending)}`);
        break;
      }
      case "withdraw-when": {
        const withdraw = new AbortController();
        const pending = client.request(acp.methods.client.session.requestPermission, permissionRequest(sessionId, "withdrawn", allKinds, `call-${++toolCalls}`), {
          cancellationSignal: withdraw.signal,
        });
        await until(() => existsSync(argument), signal);
        withdraw.abort();
        await pending.catch(() => undefined);
        await say("withdrawn");
        break;
      }
      case "wait":
        await until(() => existsSync(argument), signal);
        break;
      case "sleep":
        await sleep(Number(argument), undefined, { signal }).catch(() => undefined);
        break;
      case "flood": {
        const chunk = "x".repeat(Number(rest[1] ?? 1));
        for (let i = 0; i < Number(rest[0]); i++) {
          if (signal.aborted) break;
          await say(chunk);
        }
        break;
      }
      case "flood-timed": {
        const [count, gapMs] = rest.map(Number);
        for (let i = 0; i < count; i++) {
          if (gapMs) await sleep(gapMs);
          await say(`${process.hrtime.bigint()} `);
        }
        break;
      }
      case "cost":
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "usage_update", used: 10, size: 1000, cost: { amount: Number(argument), currency: "USD" } },
        });
        break;
      case "usage": {
        const [input, output, cacheRead, cacheWrite] = rest.map(Number);
        usage = { inputTokens: input, outputTokens: output, totalTokens: input + output, cachedReadTokens: cacheRead, cachedWriteTokens: cacheWrite };
        break;
      }
      case "stop":
        stopReason = argument as acp.StopReason;
        break;
      case "crash":
        process.exit(1);
        break;
      case "error":
        throw acp.RequestError.internalError(undefined, argument);
      default:
        break;
    }
  }
  return { stopReason: signal.aborted ? "cancelled" : stopReason, usage };
}

const app = acp
  .agent({ name: "scripted-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: flag("--load"), sessionCapabilities: flag("--resume") ? { resume: {} } : {} },
    agentInfo: { name: "scripted-agent", version: "1.0.0" },
  }))
  .onRequest(acp.methods.agent.session.new, () => {
    if (flag("--refuse-new-session")) throw acp.RequestError.internalError(undefined, "no sessions today");
    const crashMarker = value("--crash-new-session-once");
    if (crashMarker && !existsSync(crashMarker)) {
      writeFileSync(crashMarker, "");
      process.exit(1);
    }
    const sessionId = `scripted-${process.pid}-${nextSession++}`;
    return { sessionId, ...sessionState(sessionId, "no") };
  })
  .onRequest(acp.methods.agent.session.resume, ({ params }) => sessionState(params.sessionId, "resume"))
  .onRequest(acp.methods.agent.session.load, ({ params }) => sessionState(params.sessionId, "load"))
  .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    session.mode = params.modeId;
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    const turn = new AbortController();
    session.turn = turn;
    const text = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("\n");
    try {
      return await runTurn(params.sessionId, text, client, turn.signal);
    } finally {
      session.turn = undefined;
    }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    if (!flag("--ignore-cancel")) sessions.get(params.sessionId)?.turn?.abort();
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
await connection.closed;
process.exit(0);
