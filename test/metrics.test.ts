import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, ConnectError } from "@connectrpc/connect";
import { OrganizationService } from "../src/gen/switchboard/v1/organization_pb.js";
import { answerBody, finishOf, promptBody, readChat, startChatHarness, toolCallOf, type ChatHarness } from "./support/chat-harness.js";
import { scrape } from "./support/prometheus-text.js";
import { postSpeech } from "./support/speech-http.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { postVideo, waitForVideo } from "./support/video-client.js";
import { createTestCertificate, startHttpsReceiver, type HttpsReceiver } from "./webhook/https-receiver.js";

let h: ChatHarness;
let idle: TestServer;
let receiver: HttpsReceiver;
let dir: string;
const metricsOf = () => scrape(`${h.t.httpUrl}/metrics`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "switchboard-metrics-"));
  const certificate = await createTestCertificate();
  writeFileSync(join(dir, "ca.pem"), certificate.cert);
  receiver = await startHttpsReceiver(certificate);
  h = await startChatHarness({ env: { WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: join(dir, "ca.pem") } });
  // An API-only replica: its jobs stay queued, so the queue's depth is visible.
  idle = await startTestServer({ VIDEO_WORKERS: "0" });
});

afterAll(async () => {
  await Promise.all([h?.close(), idle?.close()]);
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("/metrics", () => {
  it("counts HTTP requests by route, status and reason, and core calls by method, code and reason", async () => {
    const route = { route: "/api/v1/organization/members", method: "GET", status: "200", reason: "" };
    const before = await metricsOf();
    expect((await fetch(`${h.t.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${h.t.tenant.management_key}` } })).status).toBe(200);
    const refused = await h.chat(promptBody("say hi"), { internId: "nobody" });
    expect(refused.status).toBe(404);
    const standard = createClient(OrganizationService, grpcTransportFor(h.t.grpcUrl, h.t.tenant.api_key));
    await expect(standard.listMembers({})).rejects.toBeInstanceOf(ConnectError);

    const after = await metricsOf();
    const moved = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    expect(moved("switchboard_http_request_duration_seconds_count", route)).toBe(1);
    expect(moved("switchboard_http_request_duration_seconds_count", { route: "/api/v1/interns/:internId/chat/completions", status: "404", reason: "not_found" })).toBe(1);
    const rpc = { service: "switchboard.v1.OrganizationService", method: "ListMembers" };
    expect(moved("switchboard_rpc_duration_seconds_count", { ...rpc, code: "ok", reason: "" })).toBe(1);
    expect(moved("switchboard_rpc_duration_seconds_count", { ...rpc, code: "unauthenticated", reason: "management_key_required" })).toBe(1);
    expect(moved("switchboard_rpc_duration_seconds_count", { service: "switchboard.v1.InternChatService", method: "CreateChatCompletion", code: "not_found", reason: "not_found" })).toBe(1);
  });

  it("shows open SSE streams and counts chat turns by finish", async () => {
    const gate = join(dir, "gate");
    const before = await metricsOf();
    const response = await h.open(promptBody(`say started\nwait ${gate}\npermission Deploy allow_once,reject_once\nsay done`, { approval_mode: "manual" }));
    const reader = response.body!.getReader();
    const parts: Buffer[] = [];
    const first = await reader.read();
    parts.push(Buffer.from(first.value!));
    expect((await metricsOf()).value("switchboard_open_sse_streams")).toBe(1);
    writeFileSync(gate, "");
    for (let part = await reader.read(); !part.done; part = await reader.read()) parts.push(Buffer.from(part.value));
    const asked = await readChat(new Response(Buffer.concat(parts).toString("utf8"), { headers: response.headers }));
    expect(finishOf(asked).choices[0].finish_reason).toBe("tool_calls");
    const sessionId = asked.chunks.at(-1).session_id;
    const answered = await h.chat(answerBody(sessionId, toolCallOf(asked), "allow_once"));
    expect(finishOf(answered).choices[0].finish_reason).toBe("stop");
    const failed = await h.chat(promptBody("say partial\nerror the agent broke"));
    expect(failed.chunks.some((chunk) => chunk.error)).toBe(true);

    const after = await metricsOf();
    expect(after.value("switchboard_open_sse_streams")).toBe(0);
    const turns = (labels: Record<string, string>) => after.value("switchboard_chat_turns_total", labels) - before.value("switchboard_chat_turns_total", labels);
    expect(turns({ finish: "tool_calls", reason: "" })).toBe(1);
    expect(turns({ finish: "stop", reason: "" })).toBe(1);
    expect(turns({ finish: "error", reason: "turn_failed" })).toBe(1);
    const chatCalls = { service: "switchboard.v1.InternChatService", method: "CreateChatCompletion", code: "ok", reason: "" };
    expect(after.value("switchboard_rpc_duration_seconds_count", chatCalls) - before.value("switchboard_rpc_duration_seconds_count", chatCalls)).toBe(3);
  });

  it("counts a chat stream its caller left as canceled (499 client_closed_request)", async () => {
    const left = { service: "switchboard.v1.InternChatService", method: "CreateChatCompletion", code: "canceled", reason: "client_closed_request" };
    const before = (await metricsOf()).value("switchboard_rpc_duration_seconds_count", left);
    const caller = new AbortController();
    const response = await h.open(promptBody("say hi\nsleep 30000"), { signal: caller.signal });
    await response.body!.getReader().read();
    caller.abort();
    // The call is recorded once the core has noticed the caller left.
    let after = await metricsOf();
    while (after.value("switchboard_open_sse_streams") !== 0 || after.value("switchboard_rpc_duration_seconds_count", left) === before) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await metricsOf();
    }
    expect(after.value("switchboard_rpc_duration_seconds_count", left) - before).toBe(1);
  });

  it("closes the stream of a caller that stopped reading, then left, while the writer waited for its socket to drain", { timeout: 60_000 }, async () => {
    // A host that retains the whole flood, so the run streams on while the caller stalls.
    const big = await startChatHarness({ host: { replayBytes: 256 * 1024 * 1024 } });
    try {
      await stalledThenGone(big);
    } finally {
      await big.close();
    }
  });

  async function stalledThenGone(h: ChatHarness) {
    const metricsOf = () => scrape(`${h.t.httpUrl}/metrics`);
    const url = new URL(h.t.httpUrl);
    const body = JSON.stringify(promptBody("flood 40000 1000"));
    const socket = net.connect(Number(url.port), url.hostname);
    await once(socket, "connect");
    socket.write(
      `POST /api/v1/interns/${h.internId}/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `authorization: Bearer ${h.t.tenant.api_key}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await once(socket, "data");
    // Reads nothing more: the gateway's socket buffer fills and its writer waits for `drain`.
    socket.pause();
    // The open-streams gauge once it shows `open`, or after 5 s.
    const openStreams = async (open: number) => {
      let value = (await metricsOf()).value("switchboard_open_sse_streams");
      for (let waited = 0; value !== open && waited < 5_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        value = (await metricsOf()).value("switchboard_open_sse_streams");
      }
      return value;
    };
    expect(await openStreams(1)).toBe(1);
    // Long enough for the flood to fill the socket's buffers, so the writer is waiting on `drain`.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    socket.destroy();
    expect(await openStreams(0)).toBe(0);
  }

  it("observes the real-time factor of a speech synthesis", async () => {
    const reply = await postSpeech(h.t.httpUrl, { model: "local/espeak-ng", voice: "alloy", input: "Metrics, please.", response_format: "pcm" }, { key: h.t.tenant.api_key });
    expect(reply.status).toBe(200);
    const after = await metricsOf();
    expect(after.value("switchboard_speech_real_time_factor_count", { model: "local/espeak-ng" })).toBe(1);
    expect(after.value("switchboard_speech_real_time_factor_sum", { model: "local/espeak-ng" })).toBeGreaterThan(0);
    expect(after.value("switchboard_speech_syntheses")).toBe(0);
  });

  it("shows the video queue's depth, job durations by status and webhook outcomes", async () => {
    const queued = await postVideo(idle.httpUrl, idle.tenant.api_key, { model: "local/test-pattern", prompt: "waits", duration: 1 });
    expect(queued.status).toBe(200);
    const depth = await scrape(`${idle.httpUrl}/metrics`);
    expect(depth.value("switchboard_video_jobs", { status: "pending" })).toBe(1);
    expect(depth.value("switchboard_video_jobs", { status: "in_progress" })).toBe(0);

    const submitted = await postVideo(h.t.httpUrl, h.t.tenant.api_key, {
      model: "local/test-pattern",
      prompt: "measured",
      duration: 1,
      callback_url: `https://127.0.0.1:${receiver.port}/hooks/metrics`,
    });
    expect(submitted.status).toBe(200);
    const { job } = await waitForVideo(h.t.httpUrl, h.t.tenant.api_key, submitted.body.polling_url);
    expect(job.status).toBe("completed");
    // The webhook is delivered after the job is settled; wait for the receiver to have it.
    while (receiver.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    let after = await metricsOf();
    while (after.value("switchboard_webhook_deliveries_total", { outcome: "delivered" }) === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await metricsOf();
    }
    expect(after.value("switchboard_webhook_deliveries_total", { outcome: "delivered" })).toBe(1);
    expect(after.value("switchboard_video_job_duration_seconds_count", { status: "completed" })).toBe(1);
    expect(after.value("switchboard_video_jobs", { status: "pending" })).toBe(0);
  });

  // The embedded demo host exists only on the embedded store.
  it.skipIf(process.env.SWITCHBOARD_TEST_STORE === "postgres")("shows the embedded intern host's series on the gateway's /metrics", async () => {
    const embedded = await startTestServer({ EMBEDDED_INTERN_HOST: "1" });
    try {
      const names = (await scrape(`${embedded.httpUrl}/metrics`)).names;
      for (const name of ["switchboard_intern_paused_runs", "switchboard_intern_active_runs"]) expect(names).toContain(name);
    } finally {
      await embedded.close();
    }
  });

  it("includes the event-loop delay among the process defaults", async () => {
    const names = (await metricsOf()).names;
    for (const name of ["nodejs_eventloop_lag_seconds", "nodejs_eventloop_lag_p99_seconds", "process_cpu_seconds_total"]) expect(names).toContain(name);
  });
});
