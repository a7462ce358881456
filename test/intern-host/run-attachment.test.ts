import { afterEach, describe, expect, it, vi } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { catalogueError } from "../../src/core/error-catalogue.js";
import { createRun, type Interaction, type RunOptions } from "../../src/intern-host/run.js";
import { errorOf } from "./host-harness.js";

/**
 * The attachment rules at the level of one run: through gRPC a second reader
 * can only race the first one's `paused`, so it is pinned down here.
 */
function makeRun(overrides: Partial<RunOptions> = {}) {
  const shown: Interaction[] = [];
  const pausedReports: boolean[] = [];
  const cancelTurn = vi.fn();
  const run = createRun({
    sessionId: "session-1",
    approvalMode: "manual",
    replayBytes: 1_000_000,
    interactionDeadlineMs: 1_000,
    cancelGraceMs: 10_000,
    mayPause: () => true,
    cancelTurn,
    onCancelIgnored: () => undefined,
    onInteractionShown: (interaction) => shown.push(interaction),
    onInteractionEnded: () => undefined,
    onEnded: () => undefined,
    onPausedChanged: (paused) => pausedReports.push(paused),
    ...overrides,
  });
  const ask = () =>
    run.ask({
      kind: "permission",
      arguments: { kind: "permission", operation: "op", options: ["allow_once"] },
      resolve: (answer) => {
        if (answer !== "allow_once") throw catalogueError("bad_request");
        return "approved";
      },
      cancelled: "cancelled",
      withdrawn: new AbortController().signal,
    });
  return { run, shown, ask, cancelTurn, pausedReports };
}

function refusal(call: () => unknown) {
  try {
    call();
  } catch (error) {
    if (error instanceof ConnectError) return errorOf(error);
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("run attachment", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("refuses a second reader with attachment_failed 409 while the first is attached", async () => {
    const { run, shown, ask } = makeRun();
    const signal = new AbortController().signal;
    const first = run.firstStream(signal);
    run.append({ case: "content", value: "hello" });
    const answered = ask();
    expect((await first.next()).value?.kind.case).toBe("started");
    expect((await first.next()).value?.kind.case).toBe("content");
    expect((await first.next()).value?.kind.case).toBe("interaction");
    expect(refusal(() => run.answer(shown[0], "allow_once", signal))).toMatchObject({ status: 409, reason: "attachment_failed" });
    expect((await first.next()).value?.kind.case).toBe("paused");
    expect((await first.next()).done).toBe(true);
    const second = run.answer(shown[0], "allow_once", signal);
    await expect(answered).resolves.toBe("approved");
    expect((await second.next()).value?.kind.case).toBe("started");
    run.finish("end_turn", undefined, undefined);
    expect((await second.next()).value?.kind.case).toBe("finished");
  });

  it("keeps the deadline of a question when an answer is refused", async () => {
    vi.useFakeTimers();
    const { run, shown, ask, cancelTurn } = makeRun();
    const signal = new AbortController().signal;
    const first = run.firstStream(signal);
    const answered = ask();
    const kinds: string[] = [];
    for await (const event of first) kinds.push(event.kind.case!);
    expect(kinds).toEqual(["started", "interaction", "paused"]);
    await vi.advanceTimersByTimeAsync(600);
    expect(refusal(() => run.answer(shown[0], "reject_always", signal))).toMatchObject({ status: 400, reason: "bad_request" });
    await vi.advanceTimersByTimeAsync(399);
    expect(run.cancelling).toBe(false);
    expect(shown[0].state).toBe("shown");
    await vi.advanceTimersByTimeAsync(1);
    expect(run.cancelling).toBe(true);
    expect(cancelTurn).toHaveBeenCalledOnce();
    await expect(answered).resolves.toBe("cancelled");
    expect(refusal(() => run.answer(shown[0], "allow_once", signal))).toMatchObject({ status: 409, reason: "interaction_not_pending" });
    run.finish("cancelled", undefined, undefined);
    expect(run.ended).toBe(true);
  });

  it("ends a run whose agent never confirms a cancellation after a grace period", async () => {
    vi.useFakeTimers();
    const { run } = makeRun();
    run.append({ case: "content", value: "x" });
    run.cancel("stop");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(run.ended).toBe(true);
    const kinds: string[] = [];
    for await (const event of run.firstStream(new AbortController().signal)) kinds.push(event.kind.case!);
    expect(kinds).toEqual(["started", "content", "failed"]);
  });

  it("drops output nobody can read any more once the run has ended, and keeps what a reader may still take", async () => {
    vi.useFakeTimers();
    const { run, ask } = makeRun();
    const signal = new AbortController().signal;
    const answered = ask();
    for await (const event of run.firstStream(signal)) void event;
    // Output the agent writes while it asks waits for the stream of the answer.
    run.append({ case: "content", value: "x".repeat(1_000) });
    expect(run.retainedBytes).toBeGreaterThan(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(answered).resolves.toBe("cancelled");
    run.finish("cancelled", undefined, undefined);
    expect([run.ended, run.retainedBytes]).toEqual([true, 0]);

    // A reader that leaves an ended run before its terminal event leaves nothing behind either.
    const streamed = makeRun().run;
    const reading = streamed.firstStream(signal);
    streamed.append({ case: "content", value: "y".repeat(1_000) });
    streamed.finish("end_turn", undefined, undefined);
    expect((await reading.next()).value?.kind.case).toBe("started");
    expect(streamed.retainedBytes).toBeGreaterThan(1_000);
    await reading.return(undefined);
    expect(streamed.retainedBytes).toBe(0);
  });

  it("hands one event larger than the replay bytes to a reader that has taken the rest, and numbers events without gaps", async () => {
    const { run } = makeRun({ replayBytes: 100 });
    const signal = new AbortController().signal;
    const reading = run.firstStream(signal);
    run.promptSent();
    run.append({ case: "content", value: "a" });
    expect((await reading.next()).value?.kind.case).toBe("started");
    expect((await reading.next()).value).toMatchObject({ seq: 2n, kind: { case: "content", value: "a" } });
    run.append({ case: "activity", value: { toolCallId: "t", title: "x".repeat(500), status: "in_progress" } });
    expect((await reading.next()).value).toMatchObject({ seq: 3n, kind: { case: "activity" } });
    // Past the cap behind a waiting event, the output overflows; the terminal event still takes the next number.
    run.append({ case: "content", value: "b" });
    run.append({ case: "activity", value: { toolCallId: "t", title: "y".repeat(500), status: "completed" } });
    run.finish("end_turn", undefined, undefined);
    expect((await reading.next()).value).toMatchObject({ seq: 4n, kind: { case: "content", value: "b" } });
    expect((await reading.next()).value).toMatchObject({ seq: 5n });
  });

  it("reports each change of paused once, whichever way the question ends", async () => {
    vi.useFakeTimers();
    const signal = new AbortController().signal;

    const answeredRun = makeRun();
    void answeredRun.ask();
    void answeredRun.ask();
    expect(answeredRun.pausedReports).toEqual([true]);
    for await (const event of answeredRun.run.firstStream(signal)) void event;
    answeredRun.run.answer(answeredRun.shown[0], "allow_once", signal);
    // The queued question is shown at once: paused again, still one report each way.
    expect(answeredRun.pausedReports).toEqual([true, false, true]);
    answeredRun.run.finish("end_turn", undefined, undefined);
    expect(answeredRun.pausedReports).toEqual([true, false, true, false]);

    const expiredRun = makeRun();
    void expiredRun.ask();
    await vi.advanceTimersByTimeAsync(1_000);
    expiredRun.run.finish("cancelled", undefined, undefined);
    expect(expiredRun.pausedReports).toEqual([true, false]);

    const failedRun = makeRun();
    void failedRun.ask();
    failedRun.run.fail("turn_failed", "The agent exited during the turn.");
    failedRun.run.cancel("too late");
    expect(failedRun.pausedReports).toEqual([true, false]);

    const refusedRun = makeRun({ mayPause: () => false });
    void refusedRun.ask();
    expect(refusedRun.pausedReports).toEqual([]);
  });
});
