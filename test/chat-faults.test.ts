import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { createServer as createNetServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { answerBody, contentOf, finalOf, finishOf, promptBody, readChat, startChatHarness, toolCallOf, type ChatHarness } from "./support/chat-harness.js";
import { scriptedAgentCommand } from "./support/scripted-agent-command.js";
import { freePort } from "./support/free-port.js";
import { startHostDouble, type HostDouble } from "./support/host-double.js";

const scratch = mkdtempSync(join(tmpdir(), "switchboard-faults-"));
const root = join(import.meta.dirname, "..");

describe("host limits seen through the chat route", () => {
  let h: ChatHarness;
  beforeAll(async () => {
    h = await startChatHarness({ host: { maxPausedRuns: 1, replayBytes: 400, interactionDeadlineSeconds: 1.5 } });
  });
  afterAll(() => h?.close());

  it("503 busy with Retry-After when the intern cannot hold another paused run", async () => {
    const paused = await h.chat(promptBody("permission First", { approval_mode: "manual" }));
    expect(finishOf(paused).choices[0].finish_reason).toBe("tool_calls");
    const refused = await h.chat(promptBody("say more"));
    expect(refused.status).toBe(503);
    expect(refused.refusal.error.metadata).toEqual({ reason: "busy", retryable: true });
    expect(refused.headers.get("retry-after")).toBe("5");
    await h.chat(answerBody(finalOf(paused).session_id, toolCallOf(paused), "cancel"));
  });

  it("410 attachment_failed when the paused run produced more output than the intern retains", async () => {
    const marker = join(scratch, "chattered");
    const paused = await h.chat(promptBody(`chatter-while-asking 10 50 ${marker}`, { approval_mode: "manual" }));
    while (!existsSync(marker)) await sleep(10);
    await sleep(200);
    const refused = await h.chat(answerBody(finalOf(paused).session_id, toolCallOf(paused), "allow_once"));
    expect(refused.status).toBe(410);
    expect(refused.refusal.error.metadata).toEqual({ reason: "attachment_failed", retryable: false });
  });

  it("cancels the run when the interaction deadline passes; the question is no longer pending", async () => {
    const paused = await h.chat(promptBody("permission Slow", { approval_mode: "manual" }));
    await sleep(2_500);
    const late = await h.chat(answerBody(finalOf(paused).session_id, toolCallOf(paused), "allow_once"));
    expect(late.status).toBe(409);
    expect(late.refusal.error.metadata.reason).toBe("interaction_not_pending");
    // The session is free for a new turn.
    expect(contentOf(await h.chat(promptBody("say after", { session_id: finalOf(paused).session_id })))).toBe("after");
  });

  it("reports an agent crash mid-turn in-stream as turn_failed, and the intern recovers", async () => {
    const crashed = await h.chat(promptBody("say before\ncrash"));
    expect(crashed.status).toBe(200);
    expect(finishOf(crashed).error).toMatchObject({ code: 502, metadata: { reason: "turn_failed" } });
    expect(crashed.done).toBe(true);
    let recovered;
    for (let attempt = 0; attempt < 50; attempt++) {
      recovered = await h.chat(promptBody("say back"));
      if (recovered.status === 200 && contentOf(recovered) === "back") break;
      await sleep(200);
    }
    expect(contentOf(recovered!)).toBe("back");
  });
});

describe("broken or misbehaving hosts", () => {
  let h: ChatHarness;
  let silent: Server;
  let fakeHost: HostDouble;
  let child: ChildProcess | undefined;
  const orgId = () => h.t.tenant.organization_id;
  const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));

  beforeAll(async () => {
    h = await startChatHarness({ env: { INTERN_REQUEST_TIMEOUT_MS: "700" } });
    // Accepts connections and never answers.
    silent = createNetServer(() => undefined);
    const silentPort = await listen(silent);
    await h.t.admin.addIntern({ orgId: orgId(), id: "silent", endpoint: `http://127.0.0.1:${silentPort}`, token: "t", state: "running" });
    await h.t.admin.addIntern({ orgId: orgId(), id: "wrong-token", endpoint: h.host.url, token: "not-the-host-token", state: "running" });
    // A host double speaking the real protocol whose streams end without a terminal event.
    fakeHost = await startHostDouble({
      async *startRun(request) {
        if (request.prompt === "started-then-gone") yield { event: { seq: 1n, kind: { case: "started", value: { sessionId: "s1", runId: "r1" } } } };
      },
    });
    await h.t.admin.addIntern({ orgId: orgId(), id: "hollow", endpoint: fakeHost.url, token: "t", state: "running" });
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    silent?.close();
    fakeHost?.close();
    await h?.close();
  });

  it("504 timeout when the host does not open the turn within the budget", async () => {
    const result = await h.chat(promptBody("say x"), { internId: "silent" });
    expect(result.status).toBe(504);
    expect(result.refusal.error.metadata).toEqual({ reason: "timeout", retryable: true });
  });

  it("502 intern_rejected when the host refuses the gateway's token (never a 401 to the caller)", async () => {
    const result = await h.chat(promptBody("say x"), { internId: "wrong-token" });
    expect(result.status).toBe(502);
    expect(result.refusal.error.metadata.reason).toBe("intern_rejected");
  });

  it("502 stream_severed when the host's stream ends before the turn starts", async () => {
    const result = await h.chat(promptBody("nothing"), { internId: "hollow" });
    expect(result.status).toBe(502);
    expect(result.refusal.error.metadata.reason).toBe("stream_severed");
  });

  it("in-stream stream_severed when the host's stream ends without a terminal event", async () => {
    const result = await h.chat(promptBody("started-then-gone"), { internId: "hollow" });
    expect(result.status).toBe(200);
    expect(finishOf(result).error).toMatchObject({ code: 502, metadata: { reason: "stream_severed", retryable: true } });
    expect(finalOf(result).session_id).toBe("s1");
    expect(result.done).toBe(true);
  });

  it("in-stream stream_severed when the host process dies mid-stream (kill -9)", { timeout: 60_000 }, async () => {
    const port = await freePort();
    // A real `switchboard intern-host` process in front of the scripted agent.
    child = spawn(process.execPath, ["bin/switchboard.js", "intern-host", "--listen", `127.0.0.1:${port}`, "--token", "kill-me", "--agent", scriptedAgentCommand()], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const ready = new Promise<void>((resolve) => child!.stdout!.on("data", (data: Buffer) => data.toString().includes("agent ready") && resolve()));
    await ready;
    await h.t.admin.addIntern({ orgId: orgId(), id: "mortal", endpoint: `http://127.0.0.1:${port}`, token: "kill-me", state: "running" });
    const response = await h.open(promptBody("say first\nsleep 30000"), { internId: "mortal" });
    const reading = readChat(response);
    await sleep(500);
    child.kill("SIGKILL");
    const result = await reading;
    expect(contentOf(result)).toBe("first");
    expect(finishOf(result).error).toMatchObject({ code: 502, metadata: { reason: "stream_severed" } });
    expect(result.done).toBe(true);
  });
});
