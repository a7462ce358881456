import { afterAll, beforeAll, expect, it } from "vitest";
import { attributeOf, startOtlpCollector, type OtlpCollector } from "./support/otlp-collector.js";
import { postSpeech } from "./support/speech-http.js";
import { startTestServer, type TestServer } from "./support/test-server.js";
import { postVideo } from "./support/video-client.js";

let collector: OtlpCollector;
let t: TestServer | undefined;

beforeAll(async () => {
  collector = await startOtlpCollector();
});
afterAll(async () => {
  await t?.close();
  await collector.close();
});

it("exports a speech and a video request's spans, in the callers' traces with their metadata, to the OTLP endpoint", async () => {
  t = await startTestServer({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_SERVICE_NAME: "switchboard-otlp-test" });
  const speechTrace = "11111111111111111111111111111111";
  const videoTrace = "22222222222222222222222222222222";
  const speech = await postSpeech(
    t.httpUrl,
    { model: "local/espeak-ng", voice: "alloy", input: "Hello.", response_format: "pcm", user: "u-1", trace: { trace_id: speechTrace, span_name: "speak", customer: "acme" } },
    { key: t.tenant.api_key },
  );
  expect(speech.status).toBe(200);
  const video = await postVideo(t.httpUrl, t.tenant.api_key, {
    model: "local/test-pattern",
    prompt: "a teal ocean",
    duration: 1,
    resolution: "480p",
    session_id: "s-2",
    trace: { trace_id: videoTrace, parent_span_id: "3333333333333333", generation_name: "ocean" },
  });
  expect(video.status).toBe(200);
  // Closing the server flushes the batch exporter.
  await t.close();
  t = undefined;

  const speechSpan = collector.spans.find((span) => span.name === "speak");
  expect(speechSpan?.traceId).toBe(speechTrace);
  expect(attributeOf(speechSpan!, "switchboard.trace.customer")).toBe("acme");
  expect(attributeOf(speechSpan!, "enduser.id")).toBe("u-1");
  const videoSpan = collector.spans.find((span) => span.name === "video.submit");
  expect(videoSpan?.traceId).toBe(videoTrace);
  expect(videoSpan?.parentSpanId).toBe("3333333333333333");
  expect(attributeOf(videoSpan!, "switchboard.generation_name")).toBe("ocean");
  expect(attributeOf(videoSpan!, "session.id")).toBe("s-2");
  // Every span carries the service name the operator set.
  expect(collector.resources.some((resource) => resource.includes("switchboard-otlp-test"))).toBe(true);
}, 120_000);
