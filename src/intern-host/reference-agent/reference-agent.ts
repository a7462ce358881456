import { setTimeout as sleep } from "node:timers/promises";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { parsePromptScript, type PromptStep } from "./prompt-script.js";
import { runShellCommand, type SandboxAvailability, type ShellResult } from "./shell-runner.js";

/** Options for {@link createReferenceAgent}. */
export interface ReferenceAgentOptions {
  /** The bwrap that sandboxes commands in the `default` mode, or why there is none (sandboxed execution is then refused). */
  readonly sandbox: SandboxAvailability;
  /**
   * Every command runs in the sandbox, whatever the mode, and the sandbox is
   * never escaped: for an agent whose callers must not reach the machine it
   * runs on (the gateway's embedded `demo` intern).
   */
  readonly sandboxOnly?: boolean;
  /** Directories the sandbox shows empty (the gateway's data directory, the home directory). */
  readonly hidden?: readonly string[];
}

interface ReferenceSession {
  readonly cwd: string;
  mode: "default" | "bypassPermissions";
  /** Cumulative cost in USD, reported through `usage_update`. */
  costUsd: number;
  /** A previous `allow_always`/`reject_always` for shell commands. */
  standingAnswer: "allow" | "reject" | undefined;
  turn: AbortController | undefined;
}

/** The reference agent prices its tokens so cost reporting can be seen end to end. */
const usdPerToken = 0.000002;

const modes: acp.SessionModeState = {
  currentModeId: "default",
  availableModes: [
    { id: "default", name: "Ask, sandboxed", description: "Asks before every shell command and runs it in a bubblewrap sandbox." },
    { id: "bypassPermissions", name: "Ask, unsandboxed", description: "Asks before every shell command and runs it without a sandbox." },
  ],
};

/** The same mode ids, as a sandbox-only agent runs them. */
const sandboxOnlyModes: acp.SessionModeState = {
  currentModeId: "default",
  availableModes: modes.availableModes.map((mode) => ({ ...mode, name: "Ask, sandboxed", description: "Asks before every shell command and runs it in a bubblewrap sandbox, never outside it." })),
};

const modelOption: acp.SessionConfigOption = {
  id: "model",
  name: "Model",
  category: "model",
  type: "select",
  currentValue: "reference",
  options: [{ value: "reference", name: "Reference agent (deterministic, no LLM)" }],
};

const permissionOptions: acp.PermissionOption[] = [
  { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow shell commands", kind: "allow_always" },
  { optionId: "reject-once", name: "Reject", kind: "reject_once" },
  { optionId: "reject-always", name: "Always reject shell commands", kind: "reject_always" },
];

/**
 * Creates the bundled reference agent: a deterministic, offline ACP agent for
 * trying the intern API without an LLM. It is not a model: it follows the
 * prompt grammar of `prompt-script.ts`, streams a planning thought and the
 * requested text, asks permission before every shell command and runs it for
 * real (sandboxed with bubblewrap in `default` mode, asking again to escape
 * the sandbox when the sandbox stopped the command), asks form questions,
 * and reports token usage and a cost.
 */
export function createReferenceAgent(options: ReferenceAgentOptions): acp.AgentApp {
  const sessions = new Map<string, ReferenceSession>();
  let clientAnswersForms = false;
  let nextSession = 1;
  let nextToolCall = 1;

  function openSession(sessionId: string, cwd: string) {
    sessions.set(sessionId, { cwd, mode: "default", costUsd: 0, standingAnswer: undefined, turn: undefined });
    return { modes: options.sandboxOnly ? sandboxOnlyModes : modes, configOptions: [modelOption] };
  }

  function sessionOf(sessionId: string): ReferenceSession {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    return session;
  }

  async function runTurn(sessionId: string, session: ReferenceSession, prompt: string, client: acp.AgentContext, signal: AbortSignal): Promise<acp.PromptResponse> {
    let outputCharacters = 0;
    const stream = async (sessionUpdate: "agent_message_chunk" | "agent_thought_chunk", text: string) => {
      outputCharacters += text.length;
      for (const chunk of text.match(/\S+\s*|\s+/g) ?? []) {
        await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate, content: { type: "text", text: chunk } } });
      }
    };
    const say = (text: string) => stream("agent_message_chunk", text);
    const think = (text: string) => stream("agent_thought_chunk", text);
    const steps = parsePromptScript(prompt);
    const turn: TurnContext = { sessionId, session, client, signal, say };

    await think(steps.length === 0 ? "The prompt is empty. " : `Following ${steps.length} line${steps.length === 1 ? "" : "s"} of the prompt. `);
    if (steps.length === 0) await say(helpText);
    for (const step of steps) {
      if (signal.aborted) break;
      await perform(step, turn, think);
    }

    const inputTokens = Math.ceil(prompt.length / 4);
    const outputTokens = Math.ceil(outputCharacters / 4);
    session.costUsd += (inputTokens + outputTokens) * usdPerToken;
    await client.notify(acp.methods.client.session.update, {
      sessionId,
      update: { sessionUpdate: "usage_update", used: inputTokens + outputTokens, size: 200_000, cost: { amount: session.costUsd, currency: "USD" } },
    });
    return { stopReason: signal.aborted ? "cancelled" : "end_turn", usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens } };
  }

  async function perform(step: PromptStep, turn: TurnContext, think: (text: string) => Promise<void>): Promise<void> {
    switch (step.kind) {
      case "think":
        return think(`${step.text} `);
      case "say":
        return turn.say(`${step.text}\n`);
      case "echo":
        return turn.say(`You said: ${step.text}\n`);
      case "sleep":
        await sleep(step.milliseconds, undefined, { signal: turn.signal }).catch(() => undefined);
        return;
      case "fail":
        throw acp.RequestError.internalError(undefined, step.text || "The prompt asked the reference agent to fail.");
      case "run":
        return runCommand(step.text, turn);
      case "ask":
        return askQuestion(turn, step.text, { answer: { type: "string", title: "Answer" } }, "answer");
      case "choose":
        return askQuestion(turn, step.text, { choice: { type: "string", title: "Choice", enum: step.choices } }, "choice");
    }
  }

  async function askQuestion(turn: TurnContext, message: string, properties: Record<string, acp.ElicitationPropertySchema>, field: string): Promise<void> {
    if (!clientAnswersForms) return turn.say(`I cannot ask "${message}": this client does not answer form questions.\n`);
    const response = await turn.client.request(acp.methods.client.elicitation.create, {
      sessionId: turn.sessionId,
      mode: "form",
      message,
      requestedSchema: { type: "object", properties, required: [field] },
    });
    if (response.action === "accept" && "content" in response) {
      const content = response.content as Record<string, unknown> | null | undefined;
      return turn.say(`You answered: ${String(content?.[field] ?? "")}\n`);
    }
    return turn.say(response.action === "decline" ? "You declined to answer.\n" : "You dismissed the question.\n");
  }

  async function runCommand(command: string, turn: TurnContext): Promise<void> {
    const sandboxed = options.sandboxOnly === true || turn.session.mode === "default";
    const bubblewrap = "bubblewrap" in options.sandbox ? options.sandbox.bubblewrap : undefined;
    if (sandboxed && "unavailable" in options.sandbox) {
      return turn.say(
        `I will not run \`${command}\`: this mode runs commands in a sandbox, and ${options.sandbox.unavailable}. ` +
          (options.sandboxOnly
            ? "This agent runs commands only in a sandbox.\n"
            : "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), allow it user namespaces, or use self-drive.\n"),
      );
    }
    const toolCallId = `shell-${nextToolCall++}`;
    const title = `Run ${sandboxed ? "in the sandbox" : "without a sandbox"}: ${command}`;
    await turn.client.notify(acp.methods.client.session.update, {
      sessionId: turn.sessionId,
      update: { sessionUpdate: "tool_call", toolCallId, title, kind: "execute", status: "pending", rawInput: { command, sandboxed } },
    });
    if (!(await mayRun(turn, toolCallId, title, true))) {
      await updateTool(turn, toolCallId, "failed");
      return turn.signal.aborted ? undefined : turn.say(`Not running \`${command}\`: permission refused.\n`);
    }
    await updateTool(turn, toolCallId, "in_progress");
    let result = await runShellCommand(command, { cwd: turn.session.cwd, sandbox: sandboxed ? bubblewrap : undefined, hidden: options.hidden, signal: turn.signal });
    if (result.deniedBySandbox && !turn.signal.aborted && !options.sandboxOnly) {
      await turn.say(`The sandbox stopped \`${command}\`. Asking to run it outside the sandbox.\n`);
      const escapeTitle = `Run outside the sandbox: ${command}`;
      if (await mayRun(turn, toolCallId, escapeTitle, false)) {
        result = await runShellCommand(command, { cwd: turn.session.cwd, sandbox: undefined, signal: turn.signal });
      }
    }
    await updateTool(turn, toolCallId, result.exitCode === 0 ? "completed" : "failed", result.output);
    if (!turn.signal.aborted) await turn.say(describeResult(command, result));
  }

  /** Asks permission for one command; a standing answer (allow/reject always) applies unless escaping the sandbox. */
  async function mayRun(turn: TurnContext, toolCallId: string, title: string, standingAnswerApplies: boolean): Promise<boolean> {
    if (standingAnswerApplies && turn.session.standingAnswer) return turn.session.standingAnswer === "allow";
    const response = await turn.client.request(acp.methods.client.session.requestPermission, {
      sessionId: turn.sessionId,
      toolCall: { toolCallId, title, kind: "execute" },
      options: permissionOptions,
    });
    if (response.outcome.outcome !== "selected") return false;
    const chosen = permissionOptions.find((option) => option.optionId === (response.outcome as { optionId: string }).optionId);
    if (standingAnswerApplies && chosen?.kind === "allow_always") turn.session.standingAnswer = "allow";
    if (standingAnswerApplies && chosen?.kind === "reject_always") turn.session.standingAnswer = "reject";
    return chosen?.kind === "allow_once" || chosen?.kind === "allow_always";
  }

  return acp
    .agent({ name: "switchboard-reference-agent" })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      clientAnswersForms = params.clientCapabilities?.elicitation?.form != null;
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false, sessionCapabilities: { resume: {} } },
        agentInfo: { name: "switchboard-reference-agent", title: "Switchboard reference agent (not a model)", version: "1.0.0" },
      };
    })
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      const sessionId = `ref-${process.pid}-${nextSession++}`;
      return { sessionId, ...openSession(sessionId, params.cwd) };
    })
    .onRequest(acp.methods.agent.session.resume, ({ params }) => openSession(params.sessionId, params.cwd))
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      if (params.modeId !== "default" && params.modeId !== "bypassPermissions") throw acp.RequestError.invalidParams(undefined, `Unknown mode ${params.modeId}.`);
      sessionOf(params.sessionId).mode = params.modeId;
      return {};
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const session = sessionOf(params.sessionId);
      const turn = new AbortController();
      session.turn = turn;
      const text = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("\n");
      try {
        return await runTurn(params.sessionId, session, text, client, turn.signal);
      } finally {
        session.turn = undefined;
      }
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.turn?.abort();
    });
}

interface TurnContext {
  readonly sessionId: string;
  readonly session: ReferenceSession;
  readonly client: acp.AgentContext;
  readonly signal: AbortSignal;
  say(text: string): Promise<void>;
}

function updateTool(turn: TurnContext, toolCallId: string, status: acp.ToolCallStatus, output?: string): Promise<void> {
  return turn.client.notify(acp.methods.client.session.update, {
    sessionId: turn.sessionId,
    update: {
      sessionUpdate: "tool_call_update",
      toolCallId,
      status,
      content: output === undefined ? undefined : [{ type: "content", content: { type: "text", text: output } }],
    },
  });
}

function describeResult(command: string, result: ShellResult): string {
  const output = result.output.endsWith("\n") || result.output === "" ? result.output : `${result.output}\n`;
  return `\`${command}\` exited with ${result.exitCode === null ? "no exit code (killed or not started)" : `code ${result.exitCode}`}:\n\`\`\`\n${output}\`\`\`\n`;
}

const helpText =
  "I am the Switchboard reference agent, not a model: I follow one directive per line. " +
  "Try `say: hello`, `think: a thought`, `run: ls`, `ask: What is your name?`, `choose: Pick one | red, green`, `sleep: 500` or `fail: a reason`.\n";
