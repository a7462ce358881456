import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostMaxConcurrentStreams } from "../../src/intern-host/intern-host.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { contentOf, startTestHost, type TestHost } from "./host-harness.js";

describe("intern host limits", () => {
  let test: TestHost;
  beforeAll(async () => {
    test = await startTestHost(scriptedAgentCommand());
  });
  afterAll(() => test.close());

  it("refuses a request larger than any a gateway sends, without a token, before it could hold much memory", async () => {
    const refused = await test.client.cancelRun({ sessionId: "s".repeat(2 * 1024 * 1024) }).catch((error: unknown) => ConnectError.from(error));
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.ResourceExhausted);
    // A prompt of the chat route's largest size still goes through.
    expect(contentOf(await test.start(`say ${"😀".repeat(31_990)}`))).toBe("😀".repeat(31_990));
  });

  // A gateway relays every run on one connection to the host: at 1,000 streams, the 1,001st chat stream of
  // bench/capacity waited for a slot and failed `timeout` 30 s later.
  it("lets one connection hold the 5,000 runs a gateway may relay at once, and no unbounded number", async () => {
    const session = http2.connect(test.host.url);
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
      expect(settings.maxConcurrentStreams).toBe(hostMaxConcurrentStreams);
      expect(hostMaxConcurrentStreams).toBeGreaterThanOrEqual(5_000);
      expect(hostMaxConcurrentStreams).toBeLessThan(2 ** 32 - 1);
    } finally {
      session.close();
    }
  });
});
