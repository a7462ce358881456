import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { loadServerConfig } from "../../src/server/config.js";

describe("server configuration", () => {
  it("runs up to two speech workers by default, fewer on one core", () => {
    expect(loadServerConfig({}).speechWorkers).toBe(Math.min(2, availableParallelism()));
  });

  it("takes SPEECH_WORKERS from 1 to 64 and refuses anything else with the variable's name", () => {
    expect(loadServerConfig({ SPEECH_WORKERS: "8" }).speechWorkers).toBe(8);
    for (const bad of ["0", "65", "1.5", "two"]) {
      expect(() => loadServerConfig({ SPEECH_WORKERS: bad })).toThrow(`SPEECH_WORKERS must be an integer from 1 to 64, got "${bad}".`);
    }
  });
});

describe("tracing configuration", () => {
  it("is off without an OTLP endpoint, and when the SDK is disabled", () => {
    expect(loadServerConfig({}).tracing).toBeUndefined();
    expect(loadServerConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }).tracing).toBeUndefined();
  });

  it("appends /v1/traces to the base endpoint, takes the traces endpoint as is, and names the service", () => {
    expect(loadServerConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).tracing).toEqual({ tracesUrl: "http://collector:4318/v1/traces", serviceName: "switchboard" });
    expect(
      loadServerConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b/otlp/traces", OTEL_SERVICE_NAME: "edge" }).tracing,
    ).toEqual({ tracesUrl: "https://b/otlp/traces", serviceName: "edge" });
  });

  it("refuses an endpoint that is not an http(s) URL", () => {
    expect(() => loadServerConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toThrow(/must be http\(s\) URLs/);
  });
});
