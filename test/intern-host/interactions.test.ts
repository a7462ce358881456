import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, failureOf, interactionOf, lastOf, openGate, scratchDir, sessionOf, startTestHost, type TestHost } from "./host-harness.js";

const schema = {
  type: "object",
  properties: {
    name: { type: "string", title: "Your name", minLength: 2 },
    colour: { type: "string", enum: ["red", "green"] },
    size: { type: "string", oneOf: [{ const: "s", title: "Small" }, { const: "l", title: "Large" }] },
    count: { type: "integer", minimum: 1, maximum: 5 },
    ratio: { type: "number" },
    sure: { type: "boolean" },
    tags: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 2 },
  },
  required: ["name", "count"],
};

describe("interactions", () => {
  let test: TestHost;
  beforeAll(async () => {
    test = await startTestHost(scriptedAgentCommand());
  });
  afterAll(() => test.close());

  it("shows a permission request, pauses, and continues with the first option of the answered kind", async () => {
    const paused = await test.start("say before \npermission Run-tests\nsay after", { mode: "manual" });
    expect(paused.map((event) => event.kind.case)).toEqual(["started", "content", "interaction", "paused"]);
    const interaction = interactionOf(paused);
    expect(interaction.id.length).toBeLessThanOrEqual(128);
    expect(interaction).toMatchObject({
      kind: "permission",
      arguments: { kind: "permission", operation: "Run-tests", options: ["allow_once", "allow_always", "reject_once", "reject_always"] },
    });
    expect(lastOf(paused)).toEqual({ case: "paused", value: expect.objectContaining({ interactionId: interaction.id }) });

    const resumed = await test.answer(sessionOf(paused), interaction.id, "reject_always");
    expect(resumed[0].kind).toMatchObject({ case: "started", value: { sessionId: sessionOf(paused) } });
    expect(resumed[0].kind.value).toEqual(paused[0].kind.value);
    expect(contentOf(resumed)).toBe("permission=reject_always-firstafter");
    expect(lastOf(resumed)).toMatchObject({ case: "finished" });
    expect(Number(resumed[1].seq)).toBeGreaterThan(Number(paused[paused.length - 1].seq));

    expect(await failureOf(() => test.answer(sessionOf(paused), interaction.id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
  });

  it("names the operation by the tool's programmatic name", async () => {
    const paused = await test.start("permission-named shell.exec", { mode: "manual" });
    expect(interactionOf(paused).arguments).toEqual({ kind: "permission", operation: "shell.exec", options: ["allow_once"] });
    await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
  });

  it("refuses an unoffered kind with bad_request and keeps the question pending", async () => {
    const paused = await test.start("permission Deploy allow_once,reject_once", { mode: "manual" });
    const { id, arguments: args } = interactionOf(paused);
    expect(args.options).toEqual(["allow_once", "reject_once"]);
    expect(await failureOf(() => test.answer(sessionOf(paused), id, "allow_always"))).toMatchObject({ status: 400, reason: "bad_request" });
    expect(await failureOf(() => test.answer(sessionOf(paused), id, "maybe"))).toMatchObject({ status: 400, reason: "bad_request" });
    const resumed = await test.answer(sessionOf(paused), id, "allow_once");
    expect(contentOf(resumed)).toBe("permission=allow_once-first");
  });

  it("cancels the run when the answer is cancel", async () => {
    const paused = await test.start("permission Delete\nsay never", { mode: "manual" });
    const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, "cancel");
    expect(resumed[0].kind.case).toBe("started");
    expect(contentOf(resumed)).toBe("permission=cancelled");
    expect(lastOf(resumed)).toMatchObject({ case: "failed", value: { reason: "run_ended", message: "The caller cancelled the run." } });
    await test.until((status) => status.activeRuns === 0);
    expect(contentOf(await test.start("say again", { sessionId: sessionOf(paused) }))).toBe("again");
  });

  it("answers unknown interaction ids with interaction_unknown", async () => {
    const done = await test.start("say hi");
    expect(await failureOf(() => test.answer(sessionOf(done), "perm_nope", "allow_once"))).toMatchObject({ status: 404, reason: "interaction_unknown" });
    expect(await failureOf(() => test.answer("no-such-session", "perm_nope", "allow_once"))).toMatchObject({ status: 404, reason: "interaction_unknown" });
  });

  it("approves permission requests itself in self-drive", async () => {
    const events = await test.start("permission Run-tests\nsay done", { mode: "self-drive" });
    expect(events.map((event) => event.kind.case)).not.toContain("interaction");
    expect(contentOf(events)).toBe("permission=allow_once-firstdone");
    expect(lastOf(events).case).toBe("finished");
  });

  it("shows concurrent questions one at a time", async () => {
    const first = await test.start("permissions 3", { mode: "manual" });
    const session = sessionOf(first);
    const second = await test.answer(session, interactionOf(first).id, "allow_once");
    expect(second.map((event) => event.kind.case)).toEqual(["started", "interaction", "paused"]);
    expect(interactionOf(second).id).not.toBe(interactionOf(first).id);
    const third = await test.answer(session, interactionOf(second).id, "reject_once");
    expect(third.map((event) => event.kind.case)).toEqual(["started", "interaction", "paused"]);
    const done = await test.answer(session, interactionOf(third).id, "allow_always");
    expect(contentOf(done)).toBe("permission=allow_once-first permission=reject_once-first permission=allow_always-first ");
  });

  it("describes a form question and validates answers against its schema", async () => {
    const paused = await test.start(`elicit ${JSON.stringify(schema)}`, { mode: "self-drive" });
    const { id, kind, arguments: args } = interactionOf(paused);
    expect(kind).toBe("elicitation");
    expect(args).toEqual({
      kind: "elicitation",
      message: "Please answer",
      fields: [
        { name: "name", type: "string", required: true, options: [], title: "Your name" },
        { name: "colour", type: "string", required: false, options: ["red", "green"] },
        { name: "size", type: "string", required: false, options: ["s", "l"] },
        { name: "count", type: "integer", required: true, options: [] },
        { name: "ratio", type: "number", required: false, options: [] },
        { name: "sure", type: "boolean", required: false, options: [] },
        { name: "tags", type: "array", required: false, options: ["a", "b", "c"] },
      ],
    });
    const session = sessionOf(paused);
    const invalid = [
      "not json",
      JSON.stringify({ action: "maybe" }),
      JSON.stringify({ action: "accept", content: { count: 2 } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: "2" } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2.5 } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 9 } }),
      JSON.stringify({ action: "accept", content: { name: "A", count: 2 } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2, colour: "blue" } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2, tags: ["a", "z"] } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2, tags: ["a", "b", "c"] } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2, sure: "yes" } }),
      JSON.stringify({ action: "accept", content: { name: "Al", count: 2, extra: 1 } }),
      JSON.stringify({ action: "decline", content: { name: "Al" } }),
    ];
    for (const answer of invalid) {
      expect(await failureOf(() => test.answer(session, id, answer)), answer).toMatchObject({ status: 400, reason: "bad_request" });
    }
    const content = { name: "Alice", count: 3, colour: "green", size: "l", ratio: 0.5, sure: true, tags: ["a", "c"] };
    const resumed = await test.answer(session, id, JSON.stringify({ action: "accept", content }));
    expect(JSON.parse(contentOf(resumed).replace("elicitation=", ""))).toEqual({ action: "accept", content });
  });

  it("checks a field's pattern in linear time, and leaves one RE2 cannot take to the agent", async () => {
    // With a backtracking engine, this pattern and this answer held the host's thread for minutes (each
    // character more doubles it): a regression fails on the test timeout, after a bounded wait.
    const patterned = {
      type: "object",
      properties: { slug: { type: "string", pattern: "^(\\w+\\s?)+$" }, word: { type: "string", pattern: "^(?=a)\\w+$" } },
      required: ["slug"],
    };
    const paused = await test.start(`elicit ${JSON.stringify(patterned)}`, { mode: "manual" });
    const [session, { id }] = [sessionOf(paused), interactionOf(paused)];
    const evil = JSON.stringify({ action: "accept", content: { slug: `${"a".repeat(32)}!` } });
    expect(await failureOf(() => test.answer(session, id, evil))).toMatchObject({ status: 400, reason: "bad_request" });
    const content = { slug: "two words", word: "not checked: lookahead" };
    const resumed = await test.answer(session, id, JSON.stringify({ action: "accept", content }));
    expect(JSON.parse(contentOf(resumed).replace("elicitation=", ""))).toEqual({ action: "accept", content });
  });

  it("passes a declined question on to the agent", async () => {
    const paused = await test.start(`elicit ${JSON.stringify(schema)}`, { mode: "manual" });
    const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, JSON.stringify({ action: "decline" }));
    expect(contentOf(resumed)).toBe('elicitation={"action":"decline"}');
  });

  it("treats a question the agent withdrew as no longer pending", async () => {
    const gate = join(scratchDir(), "withdraw");
    const paused = await test.start(`withdraw-when ${gate}\nsay after`, { mode: "manual" });
    expect(test.host).toBeDefined();
    await test.until((status) => status.pausedRuns === 1);
    openGate(gate);
    await test.until((status) => status.pausedRuns === 0 && status.activeRuns === 0);
    expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
  });
});
