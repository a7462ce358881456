import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, errorOf, failureOf, interactionOf, lastOf, openGate, scratchDir, sessionOf, startTestHost } from "./host-harness.js";

describe("retained output", () => {
  it("replays output the run produced while paused to the answering reader", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    try {
      const paused = await test.start("chatter-while-asking 3 4", { mode: "manual" });
      expect(paused.map((event) => event.kind.case)).toEqual(["started", "interaction", "paused"]);
      const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
      expect(contentOf(resumed)).toBe("000011112222permission=allow_once-first");
      const seqs = resumed.slice(1).map((event) => Number(event.seq));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(seqs[0]).toBe(Number(paused[2].seq) + 1);
    } finally {
      await test.close();
    }
  });

  it("refuses to resume a paused run whose output overflowed the replay bytes, with attachment_failed 410", async () => {
    const test = await startTestHost(scriptedAgentCommand(), { replayBytes: 400 });
    try {
      const marker = join(scratchDir(), "chattered");
      const paused = await test.start(`chatter-while-asking 10 50 ${marker}`, { mode: "manual" });
      while (!existsSync(marker)) await sleep(10);
      // The chatter is in the host's pipe before the marker exists; give the host a moment to read it.
      await sleep(200);
      expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 410, reason: "attachment_failed" });
      await test.until((status) => status.activeRuns === 0 && status.pausedRuns === 0);
      expect(await failureOf(() => test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
    } finally {
      await test.close();
    }
  });

  it("lets go of a turn's undelivered output once its question is settled: the session's later turns do not pile it up", { timeout: 60_000 }, async () => {
    // Whole collections, so the heap shows only what is still referenced.
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const heapAfterGc = () => (gc(), gc(), process.memoryUsage().heapUsed);
    const test = await startTestHost(scriptedAgentCommand());
    try {
      let session: string | undefined;
      const turn = async () => {
        const marker = join(scratchDir(), "chattered");
        // ~1.2 MB of chatter while asking: past the default 1 MiB replay bytes, never delivered.
        // The session stays busy until the agent answers the cancelled prompt, a moment after the run ended.
        let paused: RunEvent[] | undefined;
        while (!paused) {
          paused = await test.start(`chatter-while-asking 300 4000 ${marker}`, { mode: "manual", sessionId: session }).catch((error: unknown) => {
            if (errorOf(error).reason !== "busy") throw error;
            return sleep(20).then(() => undefined);
          });
        }
        session = sessionOf(paused);
        while (!existsSync(marker)) await sleep(10);
        await sleep(150);
        expect(await failureOf(() => test.answer(session!, interactionOf(paused).id, "allow_once"))).toMatchObject({ status: 410 });
        await test.until((status) => status.activeRuns === 0 && status.pausedRuns === 0);
      };
      await turn();
      const before = heapAfterGc();
      for (let i = 0; i < 15; i++) await turn();
      // Kept, each turn would add about its ~1 MiB of retained output.
      expect((heapAfterGc() - before) / 2 ** 20).toBeLessThan(6);
    } finally {
      await test.close();
    }
  });

  it("bounds the runs held open across a question: before the stream, and when a running run would pause", async () => {
    const test = await startTestHost(scriptedAgentCommand(), { maxPausedRuns: 1 });
    const headers = { authorization: `Bearer ${test.token}` };
    try {
      const gate = join(scratchDir(), "gate");
      const gatedEvents: RunEvent[] = [];
      const gated = (async () => {
        for await (const { event } of test.client.startRun({ prompt: `say gated\nwait ${gate}\npermission Late`, approvalMode: "manual" }, { headers })) gatedEvents.push(event!);
      })();
      await test.until((status) => status.activeRuns === 1);
      const paused = await test.start("permission First", { mode: "manual" });
      expect(lastOf(paused).case).toBe("paused");
      expect(await failureOf(() => test.start("say third"))).toMatchObject({ status: 503, reason: "busy" });
      openGate(gate);
      await gated;
      expect(lastOf(gatedEvents)).toMatchObject({ case: "failed", value: { reason: "host_busy" } });
      expect(gatedEvents.some((event) => event.kind.case === "interaction")).toBe(false);
      const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
      expect(lastOf(resumed).case).toBe("finished");
      expect(contentOf(await test.start("say free"))).toBe("free");
    } finally {
      await test.close();
    }
  });
});

describe("a reader that falls behind", () => {
  it("ends the run with attachment_failed 410 once undelivered output passes the replay bytes", async () => {
    const test = await startTestHost(scriptedAgentCommand(), { replayBytes: 20_000 });
    const headers = { authorization: `Bearer ${test.token}` };
    try {
      const stream = test.client.startRun({ prompt: "flood 4000 100\nsay end", approvalMode: "self-drive" }, { headers })[Symbol.asyncIterator]();
      const first = await stream.next();
      expect(first.value?.event?.kind.case).toBe("started");
      // Not reading lets HTTP/2 flow control stall the host's writes while the agent keeps flooding.
      await test.until((status) => status.activeRuns === 0);
      const events: RunEvent[] = [];
      for (let next = await stream.next(); !next.done; next = await stream.next()) events.push(next.value.event!);
      expect(lastOf(events)).toMatchObject({ case: "failed", value: { reason: "attachment_expired" } });
      expect(contentOf(events)).not.toContain("end");
    } finally {
      await test.close();
    }
  });
});
