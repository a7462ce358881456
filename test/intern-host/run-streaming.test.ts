import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InternHostService, type RunEvent } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { join } from "node:path";
import { contentOf, failureOf, lastOf, openGate, scratchDir, sessionOf, startTestHost, type TestHost } from "./host-harness.js";

describe("run streaming", () => {
  let test: TestHost;
  beforeAll(async () => {
    test = await startTestHost(scriptedAgentCommand("--model", "scripted-model"));
  });
  afterAll(() => test.close());

  it("opens with started, maps content, reasoning and tool activity in order, and finishes", async () => {
    const events = await test.start("think let me see\nsay Hello, \ntool t1 Listing files\nsay world");
    expect(events.map((event) => event.kind.case)).toEqual(["started", "reasoning", "content", "activity", "activity", "content", "finished"]);
    expect(events.map((event) => Number(event.seq))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(events[0].kind.value).toMatchObject({ sessionId: expect.stringMatching(/^scripted-/), runId: expect.stringMatching(/^run_/) });
    expect(contentOf(events)).toBe("Hello, world");
    expect(events[1].kind).toEqual({ case: "reasoning", value: "let me see" });
    expect(events[3].kind.value).toMatchObject({ toolCallId: "t1", title: "Listing files", status: "in_progress" });
    expect(events[4].kind.value).toMatchObject({ toolCallId: "t1", title: "Listing files", status: "completed" });
    expect(lastOf(events)).toMatchObject({ case: "finished", value: { stopReason: "end_turn", model: "scripted-model" } });
  });

  it("finishes a turn that produced no output with started and finished", async () => {
    const events = await test.start("");
    expect(events.map((event) => event.kind.case)).toEqual(["started", "finished"]);
  });

  it("continues a session it started", async () => {
    const first = await test.start("say one");
    const second = await test.start("report-session", { sessionId: sessionOf(first) });
    expect(sessionOf(second)).toBe(sessionOf(first));
    expect(contentOf(second)).toBe(`session=${sessionOf(first)} revived=no`);
  });

  it("opens the stream while the agent holds the prompt without output, and fails later turns in the stream", async () => {
    const gate = join(scratchDir(), "gate");
    const stream = test.client.startRun({ prompt: `wait ${gate}\nerror gave up`, approvalMode: "self-drive" }, { headers: { authorization: `Bearer ${test.token}` } })[Symbol.asyncIterator]();
    const first = await stream.next();
    expect(first.value?.event?.kind.case).toBe("started");
    openGate(gate);
    const rest: RunEvent[] = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value.event!);
    expect(rest.map((event) => event.kind.case)).toEqual(["failed"]);
    expect(lastOf(rest)).toMatchObject({ case: "failed", value: { reason: "turn_failed" } });
  });

  it.each(["max_tokens", "max_turn_requests", "refusal"])("maps stop reason %s to finished", async (reason) => {
    const events = await test.start(`say partial\nstop ${reason}`);
    expect(lastOf(events)).toMatchObject({ case: "finished", value: { stopReason: reason } });
  });

  it("maps an agent-side cancelled stop reason to run_ended", async () => {
    const events = await test.start("say partial\nstop cancelled");
    expect(lastOf(events)).toMatchObject({ case: "failed", value: { reason: "run_ended" } });
  });

  it("maps usage: cache reads and writes count as prompt tokens, cost is the change over the run", async () => {
    const first = await test.start("cost 0.25\nsay a\nusage 100 20 30 5");
    expect(lastOf(first)).toMatchObject({
      case: "finished",
      value: { usage: { promptTokens: 135n, completionTokens: 20n, totalTokens: 155n, cost: 0.25, promptTokensDetails: { cachedTokens: 30n } } },
    });
    const second = await test.start("say b\ncost 0.4\nusage 10 2", { sessionId: sessionOf(first) });
    const finished = lastOf(second);
    if (finished.case !== "finished") throw new Error("the run did not finish");
    expect(finished.value.usage).toMatchObject({ promptTokens: 10n, completionTokens: 2n, totalTokens: 12n });
    expect(finished.value.usage?.cost).toBeCloseTo(0.15, 10);
    expect(finished.value.usage?.promptTokensDetails).toBeUndefined();
  });

  it("leaves usage absent when the agent reports none", async () => {
    const events = await test.start("say a\ncost 1");
    expect(lastOf(events)).toMatchObject({ case: "finished" });
    expect((lastOf(events).value as { usage?: unknown }).usage).toBeUndefined();
  });

  it("sets the mode from the approval mode before every prompt", async () => {
    const selfDrive = await test.start("report-mode", { mode: "self-drive" });
    expect(contentOf(selfDrive)).toBe("mode=bypassPermissions");
    const manual = await test.start("report-mode", { mode: "manual", sessionId: sessionOf(selfDrive) });
    expect(contentOf(manual)).toBe("mode=default");
    const again = await test.start("report-mode", { mode: "self-drive", sessionId: sessionOf(selfDrive) });
    expect(contentOf(again)).toBe("mode=bypassPermissions");
  });

  it("refuses calls without the host token", async () => {
    const missing = await failureOf(() => test.client.getHostStatus({}));
    expect(missing).toMatchObject({ status: 401 });
    const wrong = await failureOf(async () => {
      for await (const _ of test.client.startRun({ prompt: "say x", approvalMode: "manual" }, { headers: { authorization: "Bearer nope" } })) void _;
    });
    expect(wrong).toMatchObject({ status: 401 });
  });

  it("refuses malformed requests before the stream opens", async () => {
    expect(await failureOf(() => test.start("say x", { mode: "sometimes" as "manual" }))).toMatchObject({ status: 400, reason: "bad_request" });
    expect(await failureOf(() => test.start("x".repeat(32_001)))).toMatchObject({ status: 400, reason: "bad_request" });
    expect(await failureOf(() => test.start("say x", { sessionId: "unknown-session" }))).toMatchObject({ status: 404, reason: "not_found" });
  });

  it("reports the agent and the host's capacity", async () => {
    const status = await test.client.getHostStatus({}, { headers: { authorization: `Bearer ${test.token}` } });
    expect(status).toMatchObject({ agentReady: true, agentName: "scripted-agent", agentVersion: "1.0.0", activeRuns: 0, pausedRuns: 0, maxPausedRuns: 32 });
  });
});

describe("protocols", () => {
  it("serves Connect and gRPC-Web over the same HTTP/2 port", async () => {
    const test = await startTestHost(scriptedAgentCommand());
    try {
      const headers = { authorization: `Bearer ${test.token}` };
      for (const transport of [createConnectTransport({ baseUrl: test.host.url, httpVersion: "2" }), createGrpcWebTransport({ baseUrl: test.host.url, httpVersion: "2" })]) {
        const client = createClient(InternHostService, transport);
        expect((await client.getHostStatus({}, { headers })).maxPausedRuns).toBe(32);
        const kinds: string[] = [];
        for await (const { event } of client.startRun({ prompt: "say hi", approvalMode: "self-drive" }, { headers })) kinds.push(event!.kind.case!);
        expect(kinds).toEqual(["started", "content", "finished"]);
      }
    } finally {
      await test.close();
    }
  });
});

describe("mode preferences", () => {
  it("follows the host's overrides and leaves agents without modes alone", async () => {
    const overridden = await startTestHost(scriptedAgentCommand("--modes", "plan,default,yolo"), { modePreferences: { selfDrive: ["yolo"], manual: ["plan"] } });
    try {
      expect(contentOf(await overridden.start("report-mode", { mode: "self-drive" }))).toBe("mode=yolo");
      expect(contentOf(await overridden.start("report-mode", { mode: "manual" }))).toBe("mode=plan");
    } finally {
      await overridden.close();
    }
    const modeless = await startTestHost(scriptedAgentCommand("--modes", "none"));
    try {
      expect(contentOf(await modeless.start("report-mode", { mode: "manual" }))).toBe("mode=none");
    } finally {
      await modeless.close();
    }
  });
});
