import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, failureOf, interactionOf, lastOf, scratchDir, sessionOf, startTestHost } from "./host-harness.js";

describe("agent faults", () => {
  it("fails a turn the agent crashes in with turn_failed, restarts the agent and resumes the session", async () => {
    const test = await startTestHost(scriptedAgentCommand("--resume"));
    try {
      const crashed = await test.start("say partial\ncrash");
      expect(contentOf(crashed)).toBe("partial");
      expect(lastOf(crashed)).toMatchObject({ case: "failed", value: { reason: "turn_failed", message: "The agent exited during the turn." } });
      expect(crashed.filter((event) => ["paused", "finished", "failed"].includes(event.kind.case!))).toHaveLength(1);
      await test.until((status) => status.agentReady && status.activeRuns === 0);
      const resumed = await test.start("report-session", { sessionId: sessionOf(crashed) });
      expect(contentOf(resumed)).toBe(`session=${sessionOf(crashed)} revived=resume`);
      expect(contentOf(await test.start("report-session", { sessionId: sessionOf(crashed) }))).toBe(`session=${sessionOf(crashed)} revived=resume`);
    } finally {
      await test.close();
    }
  });

  it("refuses a turn the agent crashes in before any output with turn_failed before the stream opens", async () => {
    const test = await startTestHost(scriptedAgentCommand("--load"));
    try {
      const first = await test.start("say hello");
      expect(await failureOf(() => test.start("crash", { sessionId: sessionOf(first) }))).toMatchObject({ status: 502, reason: "turn_failed" });
      const loaded = await test.start("report-session", { sessionId: sessionOf(first) });
      expect(contentOf(loaded)).toBe(`session=${sessionOf(first)} revived=load`);
    } finally {
      await test.close();
    }
  });

  it("forgets sessions an agent that can neither resume nor load lost in a crash", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    try {
      const crashed = await test.start("say partial\ncrash");
      expect(lastOf(crashed)).toMatchObject({ case: "failed", value: { reason: "turn_failed" } });
      expect(await failureOf(() => test.start("say again", { sessionId: sessionOf(crashed) }))).toMatchObject({ status: 404, reason: "not_found" });
      expect(contentOf(await test.start("say fresh"))).toBe("fresh");
    } finally {
      await test.close();
    }
  });

  it("fails a paused run whose agent crashes, so its question is no longer pending", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    try {
      const paused = await test.start("permission Deploy", { mode: "manual" });
      const agentPid = sessionOf(paused).split("-")[1];
      process.kill(Number(agentPid), "SIGKILL");
      await test.until((status) => status.activeRuns === 0);
      expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
    } finally {
      await test.close();
    }
  });

  it("maps a JSON-RPC error to turn_failed: before the stream without output, in the stream after it", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    try {
      expect(await failureOf(() => test.start("error out of ideas"))).toMatchObject({ status: 502, reason: "turn_failed", message: expect.stringContaining("out of ideas") });
      const partial = await test.start("say some\nerror out of ideas");
      expect(lastOf(partial)).toMatchObject({ case: "failed", value: { reason: "turn_failed" } });
      expect(contentOf(partial)).toBe("some");
    } finally {
      await test.close();
    }
  });

  it("maps an agent that refuses to open a session to intern_rejected", async () => {
    const test = await startTestHost(scriptedAgentCommand("--refuse-new-session"));
    try {
      expect(await failureOf(() => test.start("say hi"))).toMatchObject({ status: 502, reason: "intern_rejected" });
    } finally {
      await test.close();
    }
  });

  it("maps an agent that exits while opening a session to turn_failed, not a refusal, and serves the retry", async () => {
    const test = await startTestHost(scriptedAgentCommand("--crash-new-session-once", join(scratchDir(), "crashed")));
    try {
      expect(await failureOf(() => test.start("say hi"))).toMatchObject({ status: 502, reason: "turn_failed", message: "The agent exited while opening a session." });
      await test.until((status) => status.agentReady);
      expect(contentOf(await test.start("say hi"))).toBe("hi");
    } finally {
      await test.close();
    }
  });

  it("refuses runs with turn_failed when the agent cannot be started", async () => {
    const test = await startTestHost(join(scratchDir(), "no-such-agent"));
    try {
      expect(await failureOf(() => test.start("say hi"))).toMatchObject({ status: 502, reason: "turn_failed" });
      expect((await test.client.getHostStatus({}, { headers: { authorization: `Bearer ${test.token}` } })).agentReady).toBe(false);
    } finally {
      await test.close();
    }
  });

  it("ends streaming runs with run_ended when the host closes", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    const events: RunEvent[] = [];
    const stream = (async () => {
      for await (const { event } of test.client.startRun({ prompt: "say waiting\nsleep 60000", approvalMode: "self-drive" }, { headers: { authorization: `Bearer ${test.token}` } })) {
        events.push(event!);
      }
    })();
    await test.until((status) => status.activeRuns === 1);
    while (events.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    await test.close();
    await stream;
    expect(lastOf(events)).toMatchObject({ case: "failed", value: { reason: "run_ended", message: "The intern host is shutting down." } });
    const agentPid = Number(sessionOf(events).split("-")[1]);
    expect(() => process.kill(agentPid, 0)).toThrow(/ESRCH/);
  });
});
