import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startVideoJobSweeper } from "../src/core/video/video-job-sweeper.js";
import { videoQueues } from "../src/core/video/video-queues.js";
import type { VideoJobSettler } from "../src/core/video/video-job-settler.js";
import type { Store } from "../src/store/store.js";
import { openTestStore, type TestStore } from "./support/test-server.js";

describe("the video job sweeper", () => {
  let opened: TestStore;
  let store: Store;

  beforeAll(async () => {
    opened = await openTestStore();
    store = opened.store;
  });
  afterAll(() => opened?.close());

  it("looks for runs lost before their claim once per lease period, not on every sweep", async () => {
    // Every sweep reads the overdue jobs; counting those reads counts the sweeps.
    const overdue = vi.spyOn(store.videoJobs, "overdue");
    const queue = {
      send: vi.fn(),
      notify: vi.fn(),
      activeLongerThan: vi.fn(async () => []),
      retry: vi.fn(),
    };
    const sweeper = await startVideoJobSweeper({
      store,
      queue,
      settler: { finish: vi.fn(async () => false) } as unknown as VideoJobSettler,
      intervalMs: 20,
      stalledAfterSeconds: 3600,
      recoverAllAtStart: false,
      logger: { info: vi.fn(), error: vi.fn() },
    });
    try {
      await vi.waitFor(() => expect(overdue.mock.calls.length).toBeGreaterThanOrEqual(5), { timeout: 10_000 });
    } finally {
      await sweeper.stop();
      overdue.mockRestore();
    }
    expect(queue.activeLongerThan).toHaveBeenCalledTimes(1);
    expect(queue.activeLongerThan).toHaveBeenCalledWith(videoQueues.run, 3600);
  });
});
