import { describe, expect, it } from "vitest";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, interactionOf, lastOf, sessionOf, startTestHost } from "./host-harness.js";

describe("many paused runs", () => {
  // The session table forgets idle sessions past 1,024; it once forgot the
  // session it was adding instead, silently losing every later run.
  it("keeps more runs paused than the session table's soft cap, and each still resumes", { timeout: 120_000 }, async () => {
    const runs = 1_040;
    const test = await startTestHost(scriptedAgentCommand(), { maxPausedRuns: runs + 10 });
    try {
      const paused: Awaited<ReturnType<typeof test.start>>[] = [];
      for (let next = 0; next < runs; ) {
        const batch = Array.from({ length: Math.min(32, runs - next) }, () => test.start("permission X\nsay resumed", { mode: "manual" }));
        next += batch.length;
        paused.push(...(await Promise.all(batch)));
      }
      expect(paused.every((events) => lastOf(events).case === "paused")).toBe(true);
      await test.until((status) => status.pausedRuns === runs);
      const last = paused[paused.length - 1];
      const resumed = await test.answer(sessionOf(last), interactionOf(last).id, "allow_once");
      expect(contentOf(resumed)).toBe("permission=allow_once-firstresumed");
    } finally {
      await test.close();
    }
  });
});
