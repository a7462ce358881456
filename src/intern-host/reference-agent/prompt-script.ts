/**
 * One step of a reference-agent prompt. The grammar is line based so a person
 * can type it into any chat client:
 *
 *   think: TEXT              streams TEXT as reasoning
 *   say: TEXT                streams TEXT as content
 *   run: COMMAND             asks permission, then runs COMMAND with /bin/sh
 *   ask: QUESTION            asks a form question with one required text field `answer`
 *   choose: QUESTION | A, B  asks a form question with one required choice `choice`
 *   sleep: MILLISECONDS      waits (at most 60 s; a cancel ends it early)
 *   fail: MESSAGE            fails the turn with a JSON-RPC error
 *
 * Directive names are case-insensitive; any other non-empty line is echoed.
 */
export type PromptStep =
  | { kind: "think" | "say" | "echo" | "run" | "ask" | "fail"; text: string }
  | { kind: "choose"; text: string; choices: string[] }
  | { kind: "sleep"; milliseconds: number };

const maxSleepMs = 60_000;

/** Parses a prompt into the steps the reference agent performs, in order. */
export function parsePromptScript(prompt: string): PromptStep[] {
  const steps: PromptStep[] = [];
  for (const line of prompt.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === "") continue;
    const match = /^(think|say|run|ask|choose|sleep|fail):\s*(.*)$/i.exec(trimmed);
    if (!match) {
      steps.push({ kind: "echo", text: trimmed });
      continue;
    }
    const kind = match[1].toLowerCase();
    const text = match[2];
    if (kind === "sleep") steps.push({ kind, milliseconds: Math.min(Math.max(Number.parseInt(text, 10) || 0, 0), maxSleepMs) });
    else if (kind === "choose") {
      const [question, choices = ""] = text.split("|");
      steps.push({ kind, text: question.trim(), choices: choices.split(",").map((choice) => choice.trim()).filter(Boolean) });
    } else steps.push({ kind: kind as "think" | "say" | "run" | "ask" | "fail", text });
  }
  return steps;
}
