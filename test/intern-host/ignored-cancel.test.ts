import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, errorOf, failureOf, lastOf, openGate, scratchDir, sessionOf, startStreaming, startTestHost, type TestHost } from "./host-harness.js";

/** The pid of the scripted agent that opened `session` (its ids are `scripted-<pid>-<n>`). */
const agentPidOf = (session: string) => Number(session.split("-")[1]);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `prompt` on `sessionId`, retrying while the host answers busy (the wedged turn is still draining). */
async function startWhenFree(test: TestHost, prompt: string, sessionId: string) {
  for (;;) {
    try {
      return await test.start(prompt, { sessionId });
    } catch (error) {
      expect(errorOf(error)).toMatchObject({ status: 409, reason: "busy" });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("an agent that ignores session/cancel", () => {
  let test: TestHost | undefined;
  afterEach(() => test?.close());

  it("keeps the session busy, then restarts the agent once no other turn runs and continues the session there", async () => {
    test = await startTestHost(scriptedAgentCommand("--resume", "--ignore-cancel"), { cancelGraceSeconds: 0.2 });
    const headers = { authorization: `Bearer ${test.token}` };
    const other = join(scratchDir(), "other");
    const healthy = await startStreaming(test, `say other\nwait ${other}\nsay done`);
    const wedged = await startStreaming(test, `say waiting\nwait ${join(scratchDir(), "never")}`);
    const agentPid = agentPidOf(wedged.session);

    await test.client.cancelRun({ sessionId: wedged.session }, { headers });
    expect(lastOf(await wedged.done)).toMatchObject({ case: "failed", value: { reason: "run_ended", message: "The caller cancelled the run." } });
    // The agent is still on the old turn: a new prompt would get its late output.
    expect(await failureOf(() => test!.start("say next", { sessionId: wedged.session }))).toMatchObject({ status: 409, reason: "busy" });
    // The other session's turn is serving its caller, so the agent is left alone.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isAlive(agentPid)).toBe(true);

    openGate(other);
    const finished = await healthy.done;
    expect(lastOf(finished)).toMatchObject({ case: "finished" });
    expect(contentOf(finished)).toBe("otherdone");

    const continued = await startWhenFree(test, "report-session", wedged.session);
    expect(contentOf(continued)).toBe(`session=${wedged.session} revived=resume`);
    expect(isAlive(agentPid)).toBe(false);
  });

  it("frees the session without a restart when the agent ends the turn late, before the others end", async () => {
    test = await startTestHost(scriptedAgentCommand("--resume", "--ignore-cancel"), { cancelGraceSeconds: 0.1 });
    const headers = { authorization: `Bearer ${test.token}` };
    const other = join(scratchDir(), "other");
    const healthy = await startStreaming(test, `say other\nwait ${other}`);
    const late = await startStreaming(test, "say waiting\nsleep 600\nsay late");
    await test.client.cancelRun({ sessionId: late.session }, { headers });
    expect(lastOf(await late.done)).toMatchObject({ case: "failed", value: { reason: "run_ended" } });

    const next = await startWhenFree(test, "report-session", late.session);
    expect(contentOf(next)).toBe(`session=${late.session} revived=no`);
    openGate(other);
    expect(lastOf(await healthy.done)).toMatchObject({ case: "finished" });
    expect(contentOf(await test.start("report-session", { sessionId: late.session }))).toBe(`session=${late.session} revived=no`);
    expect(isAlive(agentPidOf(late.session))).toBe(true);
  });
});
