import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
});
