import { afterEach, describe, expect, it } from "vitest";
import { contentOf, finalOf, finishOf, promptBody, readChat, startChatHarness, type ChatHarness } from "./support/chat-harness.js";

let h: ChatHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("graceful shutdown", () => {
  it("lets an open stream finish within the grace period and refuses new connections", async () => {
    h = await startChatHarness();
    const response = await h.open(promptBody("say a\nsleep 400\nsay b"));
    const reading = readChat(response);
    const closing = h.t.server.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(fetch(`${h.t.httpUrl}/healthz`)).rejects.toThrow();
    const result = await reading;
    expect(contentOf(result)).toBe("ab");
    expect(finishOf(result).choices[0].finish_reason).toBe("stop");
    expect(result.done).toBe(true);
    await closing;
  });

  it("ends a stream still open when the grace period is over with a well-formed stream_severed ending", async () => {
    h = await startChatHarness();
    const response = await h.open(promptBody("say a\nsleep 30000"));
    const reading = readChat(response);
    const started = Date.now();
    await h.t.server.close();
    const result = await reading;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(contentOf(result)).toBe("a");
    expect(finishOf(result).error).toMatchObject({ code: 502, metadata: { reason: "stream_severed", retryable: true } });
    expect(finalOf(result).choices).toEqual([]);
    expect(result.done).toBe(true);
  });
});
