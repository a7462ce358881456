import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, failureOf, interactionOf, lastOf, openGate, scratchDir, sessionOf, startStreaming, startTestHost, type TestHost } from "./host-harness.js";

describe("run lifecycle", () => {
  let test: TestHost;
  let headers: { authorization: string };
  beforeAll(async () => {
    test = await startTestHost(scriptedAgentCommand());
    headers = { authorization: `Bearer ${test.token}` };
  });
  afterAll(() => test.close());

  /** Starts a gated run and returns its session once it is streaming. */
  const startGated = (gate: string) => startStreaming(test, `say waiting\nwait ${gate}\nsay released`);

  it("allows one running turn per session", async () => {
    const gate = join(scratchDir(), "gate");
    const { session, done } = await startGated(gate);
    expect(await failureOf(() => test.start("say second", { sessionId: session }))).toMatchObject({ status: 409, reason: "busy" });
    openGate(gate);
    expect(contentOf(await done)).toBe("waitingreleased");
    expect(contentOf(await test.start("say second", { sessionId: session }))).toBe("second");
  });

  it("treats a paused run as the session's running turn", async () => {
    const paused = await test.start("permission Deploy", { mode: "manual" });
    expect(await failureOf(() => test.start("say second", { sessionId: sessionOf(paused) }))).toMatchObject({ status: 409, reason: "busy" });
    await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
  });

  it("cancels a streaming run on CancelRun and ends its stream with run_ended", async () => {
    const gate = join(scratchDir(), "never");
    const { session, done } = await startGated(gate);
    await test.client.cancelRun({ sessionId: session }, { headers });
    const events = await done;
    expect(lastOf(events)).toMatchObject({ case: "failed", value: { reason: "run_ended", message: "The caller cancelled the run." } });
    expect(events.filter((event) => ["paused", "finished", "failed"].includes(event.kind.case!))).toHaveLength(1);
  });

  it("cancels a paused run on CancelRun", async () => {
    const paused = await test.start("permission Deploy", { mode: "manual" });
    await test.client.cancelRun({ sessionId: sessionOf(paused) }, { headers });
    await test.until((status) => status.activeRuns === 0);
    expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
  });

  it("refuses CancelRun for an unknown session and accepts it for an idle one", async () => {
    expect(await failureOf(() => test.client.cancelRun({ sessionId: "nope" }, { headers }))).toMatchObject({ status: 404, reason: "not_found" });
    const done = await test.start("say hi");
    await test.client.cancelRun({ sessionId: sessionOf(done) }, { headers });
  });

  it("cancels a run whose reader goes away while it streams", async () => {
    const gate = join(scratchDir(), "never");
    const abort = new AbortController();
    const stream = test.client.startRun({ prompt: `say waiting\nwait ${gate}`, approvalMode: "self-drive" }, { headers, signal: abort.signal });
    let session = "";
    await expect(
      (async () => {
        for await (const { event } of stream) {
          if (event?.kind.case === "started") session = event.kind.value.sessionId;
          if (event?.kind.case === "content") abort.abort();
        }
      })(),
    ).rejects.toThrow();
    await test.until((status) => status.activeRuns === 0);
    expect(contentOf(await test.start("say next", { sessionId: session }))).toBe("next");
  });

  it("cancels a run whose reader goes away before reading the question that paused it", async () => {
    const retaining = await startTestHost(scriptedAgentCommand(), { replayBytes: 64 * 1024 * 1024 });
    try {
      const abort = new AbortController();
      // Output the slow reader has not taken yet sits in front of the question.
      const stream = retaining.client.startRun({ prompt: "flood 4000 1000\npermission Deploy", approvalMode: "manual" }, { headers: { authorization: `Bearer ${retaining.token}` }, signal: abort.signal });
      const iterator = stream[Symbol.asyncIterator]();
      const started = (await iterator.next()).value!.event!;
      const session = started.kind.case === "started" ? started.kind.value.sessionId : "";
      // The host shows the question (the run counts as paused) while the reader has not read it.
      await retaining.until((status) => status.pausedRuns === 1);
      abort.abort();
      await expect(iterator.next()).rejects.toThrow();
      await retaining.until((status) => status.activeRuns === 0 && status.pausedRuns === 0);
      expect(contentOf(await retaining.start("say next", { sessionId: session }))).toBe("next");
    } finally {
      await retaining.close();
    }
  });
});

describe("interaction deadline", () => {
  it("keeps a paused run after its reader left and cancels it when the deadline passes", async () => {
    const test = await startTestHost(scriptedAgentCommand(), { interactionDeadlineSeconds: 0.5 });
    try {
      const paused = await test.start("permission Deploy", { mode: "manual" });
      expect(lastOf(paused).case).toBe("paused");
      await test.until((current) => current.activeRuns === 0 && current.pausedRuns === 0);
      expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
      expect(contentOf(await test.start("say again", { sessionId: sessionOf(paused) }))).toBe("again");
    } finally {
      await test.close();
    }
  });
});
