import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { referenceAgentCommand } from "../../src/intern-host/reference-agent/reference-agent-command.js";
import { checkSandbox } from "../../src/intern-host/reference-agent/shell-runner.js";
import { contentOf, interactionOf, lastOf, scratchDir, sessionOf, startTestHost, type TestHost } from "./host-harness.js";

const bubblewrap = "bubblewrap" in checkSandbox(undefined);

describe("reference agent", () => {
  let test: TestHost;
  let cwd: string;
  beforeAll(async () => {
    cwd = scratchDir();
    test = await startTestHost(referenceAgentCommand(), { cwd });
  });
  afterAll(() => test.close());

  it("streams reasoning and content, runs a command unsandboxed in self-drive, and reports usage", async () => {
    const events = await test.start("think: checking the directory\nsay: Hello there\nrun: echo from-the-shell && pwd", { mode: "self-drive" });
    const kinds = events.map((event) => event.kind.case);
    expect(kinds[0]).toBe("started");
    expect(kinds).toContain("reasoning");
    expect(kinds).toContain("activity");
    expect(kinds).not.toContain("interaction");
    const text = contentOf(events);
    expect(text).toContain("Hello there\n");
    expect(text).toContain("from-the-shell\n");
    expect(text).toContain(cwd);
    const finished = lastOf(events);
    if (finished.case !== "finished") throw new Error("the run did not finish");
    expect(finished.value.stopReason).toBe("end_turn");
    expect(finished.value.model).toBe("reference");
    expect(finished.value.usage?.promptTokens).toBeGreaterThan(0n);
    expect(finished.value.usage?.completionTokens).toBeGreaterThan(0n);
    expect(finished.value.usage?.cost).toBeGreaterThan(0);
  });

  it("asks a question and uses the answer", async () => {
    const paused = await test.start("ask: What is your name?", { mode: "manual" });
    const interaction = interactionOf(paused);
    expect(interaction.arguments).toEqual({
      kind: "elicitation",
      message: "What is your name?",
      fields: [{ name: "answer", type: "string", required: true, options: [], title: "Answer" }],
    });
    const resumed = await test.answer(sessionOf(paused), interaction.id, JSON.stringify({ action: "accept", content: { answer: "Ada" } }));
    expect(contentOf(resumed)).toContain("You answered: Ada");
  });

  it("offers choices as field options", async () => {
    const paused = await test.start("choose: Pick a colour | red, green", { mode: "self-drive" });
    expect(interactionOf(paused).arguments.fields).toEqual([{ name: "choice", type: "string", required: true, options: ["red", "green"], title: "Choice" }]);
    const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, JSON.stringify({ action: "accept", content: { choice: "green" } }));
    expect(contentOf(resumed)).toContain("You answered: green");
  });

  it("fails the turn on request", async () => {
    const events = await test.start("say: about to fail\nfail: on purpose");
    expect(lastOf(events)).toMatchObject({ case: "failed", value: { reason: "turn_failed" } });
  });

  it.skipIf(!bubblewrap)("asks before running a command in manual mode and runs it in the sandbox", async () => {
    const paused = await test.start("run: echo sandboxed > inside.txt && cat inside.txt", { mode: "manual" });
    const interaction = interactionOf(paused);
    expect(interaction.arguments).toEqual({
      kind: "permission",
      operation: "Run in the sandbox: echo sandboxed > inside.txt && cat inside.txt",
      options: ["allow_once", "allow_always", "reject_once", "reject_always"],
    });
    const resumed = await test.answer(sessionOf(paused), interaction.id, "allow_once");
    expect(contentOf(resumed)).toContain("sandboxed\n");
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("sandboxed\n");
  });

  it.skipIf(!bubblewrap)("asks again before escaping the sandbox", async () => {
    const outside = join(scratchDir(), "outside.txt");
    const paused = await test.start(`run: touch ${outside}`, { mode: "manual" });
    const escape = await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
    expect(contentOf(escape)).toContain("The sandbox stopped");
    expect(interactionOf(escape).arguments.operation).toBe(`Run outside the sandbox: touch ${outside}`);
    expect(existsSync(outside)).toBe(false);
    const done = await test.answer(sessionOf(paused), interactionOf(escape).id, "allow_once");
    expect(lastOf(done).case).toBe("finished");
    expect(existsSync(outside)).toBe(true);
  });

  it("does not run a refused command", async () => {
    const marker = join(cwd, "refused.txt");
    const paused = await test.start(`run: touch ${marker}`, { mode: "manual" });
    if (!bubblewrap) {
      expect(contentOf(paused)).toContain("I will not run");
      return;
    }
    const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, "reject_once");
    expect(contentOf(resumed)).toContain("permission refused");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("reference agent without bubblewrap", () => {
  it("says so and refuses sandboxed execution in manual mode", async () => {
    const test = await startTestHost(referenceAgentCommand({ bubblewrap: join(scratchDir(), "no-bwrap") }));
    try {
      const events = await test.start("run: echo should-not-run", { mode: "manual" });
      expect(events.map((event) => event.kind.case)).not.toContain("interaction");
      expect(contentOf(events)).toContain("bubblewrap (bwrap) is not installed");
      expect(contentOf(events)).not.toContain("should-not-run\n");
      const selfDrive = await test.start("run: echo runs-unsandboxed", { mode: "self-drive" });
      expect(contentOf(selfDrive)).toContain("runs-unsandboxed\n");
    } finally {
      await test.close();
    }
  });
});
