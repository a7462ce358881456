import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkSandbox } from "../src/intern-host/reference-agent/shell-runner.js";
import { answerBody, contentOf, promptBody, readChat, toolCallOf } from "./support/chat-harness.js";
import { startTestServer, type TestServer } from "./support/test-server.js";

const bubblewrap = "bubblewrap" in checkSandbox(undefined);
// A secret in the gateway's environment, as ADMIN_TOKEN, DATABASE_URL or a provider key would be.
const canary = `canary-${process.pid}-in-the-gateway-environment`;

// The `demo` intern runs the reference agent on the gateway's own machine (embedded store only): a caller
// holding any key of the bootstrap organization runs shell commands there, so nothing of the gateway may show.
describe.skipIf(process.env.SWITCHBOARD_TEST_STORE === "postgres")("the embedded demo intern", () => {
  let t: TestServer;
  const chat = async (body: object) =>
    readChat(
      await fetch(`${t.httpUrl}/api/v1/interns/demo/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${t.tenant.api_key}` },
        body: JSON.stringify(body),
      }),
    );
  // Every way the gateway's secrets could be reached from the workspace, in one command line.
  const probe = `run: cat ../admin-token ../bootstrap.json; ls -a ..; ls ${"$"}HOME/..; env; cat /proc/*/environ`;
  const expectNothingOfTheGateway = (text: string) => {
    expect(text).not.toContain(t.server.adminToken);
    expect(text).not.toContain(t.tenant.management_key);
    expect(text).not.toContain("switchboard.lock");
    expect(text).not.toContain(canary);
  };

  beforeAll(async () => {
    process.env.SWITCHBOARD_TEST_CANARY = canary;
    t = await startTestServer({ EMBEDDED_INTERN_HOST: "1" });
  });
  afterAll(async () => {
    delete process.env.SWITCHBOARD_TEST_CANARY;
    await t?.close();
  });

  it("runs a self-drive command in the sandbox, where the data directory and the gateway's environment are not", async () => {
    const done = await chat(promptBody(probe));
    expect(done.status).toBe(200);
    const text = contentOf(done);
    expectNothingOfTheGateway(text);
    if (!bubblewrap) return void expect(text).toContain("I will not run");
    expect(text).toContain("exited with code");
    // The workspace itself is there, and writable.
    expect(contentOf(await chat(promptBody("run: echo kept > note.txt && cat note.txt")))).toContain("kept\n");
  });

  it.skipIf(!bubblewrap)("runs an allowed manual-mode command in the sandbox and never offers to leave it", async () => {
    const asked = await chat(promptBody(probe, { approval_mode: "manual" }));
    expect(JSON.parse(toolCallOf(asked).function.arguments).operation).toMatch(/^Run in the sandbox: /);
    const done = await chat(answerBody(asked.chunks.at(-1).session_id, toolCallOf(asked), "allow_once"));
    const text = contentOf(done);
    expectNothingOfTheGateway(text);
    expect(text).not.toContain("Asking to run it outside the sandbox");
    expect(done.chunks.some((chunk) => chunk.choices[0]?.finish_reason === "stop")).toBe(true);
  });
});
