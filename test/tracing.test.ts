import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { createClient } from "@connectrpc/connect";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { OrganizationService } from "../src/gen/switchboard/v1/organization_pb.js";
import { scriptedAgentCommand } from "./support/scripted-agent-command.js";
import { startInternHost, type RunningInternHost } from "../src/intern-host/intern-host.js";
import { promptBody, readChat } from "./support/chat-harness.js";
import { postSpeech } from "./support/speech-http.js";
import { startHostDouble } from "./support/host-double.js";
import { grpcTransportFor, startTestServer, type TestServer } from "./support/test-server.js";
import { postVideo } from "./support/video-client.js";
import { createTestCertificate, startHttpsReceiver, type HttpsReceiver } from "./webhook/https-receiver.js";

const exporter = new InMemorySpanExporter();
let t: TestServer;
let host: RunningInternHost;
let receiver: HttpsReceiver;
let dir: string;

const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const callerSpan = "00f067aa0ba902b7";
const traceparent = `00-${callerTrace}-${callerSpan}-01`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "switchboard-tracing-"));
  const certificate = await createTestCertificate();
  writeFileSync(join(dir, "ca.pem"), certificate.cert);
  receiver = await startHttpsReceiver(certificate);
  // The webhook receiver is on loopback with a self-signed certificate: the operator's switches allow it.
  t = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_CA_FILE: join(dir, "ca.pem") }, {}, undefined, { spanExporter: exporter });
  const token = "host-token-for-tracing";
  host = await startInternHost({ port: 0, token, agent: scriptedAgentCommand() });
  await t.admin.addIntern({ orgId: t.tenant.organization_id, id: "scripted", endpoint: host.url, token, state: "running" });
});
afterAll(async () => {
  await host?.close();
  await t?.close();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((span) => span.name === name);
async function eventually(name: string): Promise<ReadableSpan> {
  return vi.waitFor(() => {
    const [span] = named(name);
    if (!span) throw new Error(`no span ${name} among ${spans().map((s) => s.name).join(", ")}`);
    return span;
  }, { timeout: 20_000, interval: 50 });
}

describe("a span for every operation", () => {
  it("traces a bridge request as a SERVER span of its RPC, joining the caller's traceparent", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${t.tenant.management_key}`, traceparent } });
    expect(response.status).toBe(200);
    const span = await eventually("switchboard.v1.OrganizationService/ListMembers");
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.spanContext().traceId).toBe(callerTrace);
    expect(span.parentSpanContext?.spanId).toBe(callerSpan);
    expect(span.attributes).toMatchObject({ "rpc.system": "connect_rpc", "rpc.service": "switchboard.v1.OrganizationService", "rpc.method": "ListMembers" });
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("traces a gRPC call the same way, and marks a refusal with its reason", async () => {
    const client = createClient(OrganizationService, grpcTransportFor(t.grpcUrl, t.tenant.api_key));
    await expect(client.listMembers({}, { headers: { traceparent } })).rejects.toThrow();
    const span = await eventually("switchboard.v1.OrganizationService/ListMembers");
    expect(span.spanContext().traceId).toBe(callerTrace);
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes["switchboard.reason"]).toBe("management_key_required");
  });

  it("starts a new trace when the request carries none", async () => {
    await fetch(`${t.httpUrl}/api/v1/organization/members`, { headers: { authorization: `Bearer ${t.tenant.management_key}` } });
    const span = await eventually("switchboard.v1.OrganizationService/ListMembers");
    expect(span.spanContext().traceId).not.toBe(callerTrace);
    expect(span.parentSpanContext).toBeUndefined();
  });
});

describe("the request's trace object", () => {
  it("puts a speech synthesis in the caller's trace, named and attributed by it, with the engine call under it", async () => {
    const reply = await postSpeech(
      t.httpUrl,
      {
        model: "local/espeak-ng",
        voice: "en-us",
        input: "Hello.",
        response_format: "pcm",
        session_id: "sess-7",
        user: "user-9",
        trace: { trace_id: callerTrace, parent_span_id: callerSpan, span_name: "speak", trace_name: "onboarding", generation_name: "greeting", customer: "acme", tier: 3 },
      },
      { key: t.tenant.api_key },
    );
    expect(reply.status).toBe(200);
    const operation = await eventually("speak");
    expect(operation.spanContext().traceId).toBe(callerTrace);
    expect(operation.parentSpanContext?.spanId).toBe(callerSpan);
    expect(operation.attributes).toMatchObject({
      "switchboard.trace_name": "onboarding",
      "switchboard.generation_name": "greeting",
      "switchboard.trace.customer": "acme",
      "switchboard.trace.tier": 3,
      "session.id": "sess-7",
      "enduser.id": "user-9",
      "switchboard.model": "local/espeak-ng",
      "switchboard.outcome": "completed",
    });
    expect(operation.attributes["switchboard.trace.trace_id"]).toBeUndefined();
    // Linked to the RPC's own span, which stays in the trace the HTTP request came with.
    const call = await eventually("switchboard.v1.SpeechService/StreamSpeech");
    expect(operation.links.map((link) => link.context.spanId)).toEqual([call.spanContext().spanId]);
    const engine = await eventually("speech.engine local/espeak-ng");
    expect(engine.kind).toBe(SpanKind.CLIENT);
    expect(engine.parentSpanContext?.spanId).toBe(operation.spanContext().spanId);
  });

  it("ignores malformed ids: the operation stays under the call's span", async () => {
    const reply = await postSpeech(
      t.httpUrl,
      { model: "local/espeak-ng", voice: "en-us", input: "Hi.", response_format: "pcm", trace: { trace_id: "not-hex", parent_span_id: "zz" } },
      { key: t.tenant.api_key },
    );
    expect(reply.status).toBe(200);
    const operation = await eventually("speech.synthesize");
    const call = await eventually("switchboard.v1.SpeechService/StreamSpeech");
    expect(operation.spanContext().traceId).toBe(call.spanContext().traceId);
    expect(operation.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
  });

  it("puts a video submission in the caller's trace, and its queued run and webhook delivery under it", async () => {
    const submitted = await postVideo(t.httpUrl, t.tenant.api_key, {
      model: "local/test-pattern",
      prompt: "a teal ocean",
      duration: 1,
      resolution: "480p",
      user: "user-3",
      callback_url: `https://127.0.0.1:${receiver.port}/hooks/traced`,
      trace: { trace_id: callerTrace, parent_span_id: callerSpan, generation_name: "ocean" },
    });
    expect(submitted.status).toBe(200);
    const operation = await eventually("video.submit");
    expect(operation.spanContext().traceId).toBe(callerTrace);
    expect(operation.parentSpanContext?.spanId).toBe(callerSpan);
    expect(operation.attributes).toMatchObject({ "switchboard.generation_name": "ocean", "enduser.id": "user-3", "switchboard.model": "local/test-pattern" });
    const job = await eventually("video.job");
    expect(job.spanContext().traceId).toBe(callerTrace);
    expect(job.parentSpanContext?.spanId).toBe(operation.spanContext().spanId);
    expect(job.attributes).toMatchObject({ "switchboard.job_id": submitted.body.id, "switchboard.outcome": "completed" });
    const provider = await eventually("video.provider local/test-pattern");
    expect(provider.kind).toBe(SpanKind.CLIENT);
    expect(provider.parentSpanContext?.spanId).toBe(job.spanContext().spanId);
    const webhook = await eventually("video.webhook");
    expect(webhook.spanContext().traceId).toBe(callerTrace);
    expect(webhook.parentSpanContext?.spanId).toBe(operation.spanContext().spanId);
    expect(webhook.attributes).toMatchObject({ "switchboard.job_id": submitted.body.id, "switchboard.outcome": "delivered", "switchboard.attempts": 1 });
  });
});

describe("the intern host call", () => {
  /** Asks an intern to say hello, inside the caller's trace. */
  const chatInTrace = async (internId: string) =>
    readChat(
      await fetch(`${t.httpUrl}/api/v1/interns/${internId}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${t.tenant.api_key}`, traceparent },
        body: JSON.stringify(promptBody("say hello")),
      }),
    );

  it("is a CLIENT span under the chat call's span", async () => {
    const result = await chatInTrace("scripted");
    expect(result.done).toBe(true);
    const call = await eventually("switchboard.v1.InternChatService/CreateChatCompletion");
    const hostCall = await eventually("InternHostService/StartRun");
    expect(call.spanContext().traceId).toBe(callerTrace);
    expect(hostCall.kind).toBe(SpanKind.CLIENT);
    expect(hostCall.spanContext().traceId).toBe(callerTrace);
    expect(hostCall.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    expect(hostCall.attributes["switchboard.intern_id"]).toBe("scripted");
  });

  it("sends the host a traceparent naming that CLIENT span, so a tracing host joins the caller's trace", async () => {
    const received: Headers[] = [];
    const recorder = await startHostDouble({
      async *startRun(_request, context) {
        received.push(context.requestHeader);
        yield { event: { seq: 1n, kind: { case: "started", value: { sessionId: "recorded-session", runId: "recorded-run" } } } };
        yield { event: { seq: 2n, kind: { case: "finished", value: { stopReason: "end_turn" } } } };
      },
    });
    try {
      await t.admin.addIntern({ orgId: t.tenant.organization_id, id: "recorded", endpoint: recorder.url, token: "recorded-host-token", state: "running" });
      expect((await chatInTrace("recorded")).done).toBe(true);
      const hostCall = await eventually("InternHostService/StartRun");
      expect(received).toHaveLength(1);
      expect(received[0].get("authorization")).toBe("Bearer recorded-host-token");
      expect(received[0].get("traceparent")).toBe(`00-${callerTrace}-${hostCall.spanContext().spanId}-01`);
    } finally {
      recorder.close();
    }
  });
});

describe("with tracing off", () => {
  it("still hands the host the caller's traceparent, and none when the caller sent none", async () => {
    const untraced = await startTestServer();
    const received: Headers[] = [];
    const recorder = await startHostDouble({
      async *startRun(_request, context) {
        received.push(context.requestHeader);
        yield { event: { seq: 1n, kind: { case: "started", value: { sessionId: `untraced-${received.length}`, runId: "untraced-run" } } } };
        yield { event: { seq: 2n, kind: { case: "finished", value: { stopReason: "end_turn" } } } };
      },
    });
    try {
      await untraced.admin.addIntern({ orgId: untraced.tenant.organization_id, id: "untraced", endpoint: recorder.url, token: "untraced-host-token", state: "running" });
      const chat = (headers: Record<string, string>) =>
        fetch(`${untraced.httpUrl}/api/v1/interns/untraced/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${untraced.tenant.api_key}`, ...headers },
          body: JSON.stringify(promptBody("say hello")),
        }).then(readChat);
      expect((await chat({ traceparent })).done).toBe(true);
      expect((await chat({})).done).toBe(true);
      expect(received).toHaveLength(2);
      // The no-op tracer's span carries the caller's context unchanged.
      expect(received[0].get("traceparent")).toBe(traceparent);
      expect(received[1].get("traceparent")).toBeNull();
      expect(spans()).toHaveLength(0);
    } finally {
      recorder.close();
      await untraced.close();
    }
  });
});
