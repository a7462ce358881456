import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
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

describe("switches and the log level", () => {
  it("takes 0 or 1 for EMBEDDED_INTERN_HOST and WEBHOOK_ALLOW_PRIVATE and refuses anything else", () => {
    expect(loadServerConfig({}).embeddedInternHost).toBe(true);
    expect(loadServerConfig({ EMBEDDED_INTERN_HOST: "0" }).embeddedInternHost).toBe(false);
    expect(loadServerConfig({ WEBHOOK_ALLOW_PRIVATE: "1" }).webhookAllowPrivate).toBe(true);
    for (const bad of ["false", "no", "off", "true", " 0"]) {
      expect(() => loadServerConfig({ EMBEDDED_INTERN_HOST: bad })).toThrow(`EMBEDDED_INTERN_HOST must be 0 or 1, got ${JSON.stringify(bad)}.`);
      expect(() => loadServerConfig({ WEBHOOK_ALLOW_PRIVATE: bad })).toThrow(`WEBHOOK_ALLOW_PRIVATE must be 0 or 1, got ${JSON.stringify(bad)}.`);
    }
  });

  it("takes one of pino's levels for LOG_LEVEL, info by default, and refuses others by name", () => {
    expect(loadServerConfig({}).logLevel).toBe("info");
    expect(loadServerConfig({ LOG_LEVEL: "debug" }).logLevel).toBe("debug");
    expect(() => loadServerConfig({ LOG_LEVEL: "verbose" })).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose".');
  });

  it("stops switchboard serve and intern-host on a bad value with one line on stderr, not a stack", async () => {
    const run = promisify(execFile);
    const root = join(import.meta.dirname, "..", "..");
    const failures = await Promise.all([
      run(process.execPath, ["bin/switchboard.js", "serve"], { cwd: root, env: { ...process.env, PORT: "abc" } }).catch((error) => error),
      run(process.execPath, ["bin/switchboard.js", "intern-host", "--listen", "127.0.0.1:0", "--token", "t", "--agent", "reference"], { cwd: root, env: { ...process.env, LOG_LEVEL: "loud" } }).catch((error) => error),
    ]);
    expect(failures.map((failure) => [failure.code, failure.stderr])).toEqual([
      [1, 'switchboard: PORT must be an integer from 0 to 65535, got "abc".\n'],
      [1, 'switchboard: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud".\n'],
    ]);
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

describe("the secrets key", () => {
  const key = randomBytes(32);

  it("takes SECRETS_KEY as 64 hex characters, base64 or base64url of 32 bytes, and is unset by default", () => {
    expect(loadServerConfig({}).secretsKey).toBeUndefined();
    expect(loadServerConfig({ SECRETS_KEY: key.toString("hex") }).secretsKey).toEqual(key);
    expect(loadServerConfig({ SECRETS_KEY: key.toString("hex").toUpperCase() }).secretsKey).toEqual(key);
    expect(loadServerConfig({ SECRETS_KEY: key.toString("base64") }).secretsKey).toEqual(key);
    expect(loadServerConfig({ SECRETS_KEY: key.toString("base64").replace(/=$/, "") }).secretsKey).toEqual(key);
    expect(loadServerConfig({ SECRETS_KEY: key.toString("base64url") }).secretsKey).toEqual(key);
  });

  it("refuses any other length or alphabet by the variable's name, without echoing the value", () => {
    const bad = [randomBytes(16).toString("hex"), randomBytes(31).toString("hex"), randomBytes(33).toString("base64"), randomBytes(24).toString("base64"), `${key.toString("hex").slice(1)}g`, "not a key"];
    for (const value of bad) {
      expect(() => loadServerConfig({ SECRETS_KEY: value })).toThrow(`SECRETS_KEY must be 32 bytes written as 64 hex characters or in base64 (43 or 44 characters), got ${value.length} characters.`);
      expect(() => loadServerConfig({ SECRETS_KEY: value })).not.toThrow(value);
    }
  });
});
