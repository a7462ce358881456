import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { parsePrometheusText, scrape } from "../support/prometheus-text.js";
import { scriptedAgentCommand } from "../support/scripted-agent-command.js";
import { interactionOf, lastOf, sessionOf, startTestHost, type TestHost } from "./host-harness.js";

describe("intern host metrics on --metrics-listen", () => {
  let test: TestHost;
  const metricsOf = () => scrape(test.host.metricsUrl!);
  beforeAll(async () => {
    test = await startTestHost(scriptedAgentCommand(), { metricsListen: { host: "127.0.0.1", port: 0 } });
  });
  afterAll(() => test.close());

  it("shows paused runs and counts answered questions", async () => {
    expect(test.host.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const paused = await test.start("permission Deploy allow_once,reject_once\nsay done", { mode: "manual" });
    expect(lastOf(paused).case).toBe("paused");
    const whilePaused = await metricsOf();
    expect(whilePaused.value("switchboard_intern_paused_runs")).toBe(1);
    expect(whilePaused.value("switchboard_intern_active_runs")).toBe(1);
    expect(whilePaused.value("switchboard_intern_interactions_total")).toBe(0);

    const resumed = await test.answer(sessionOf(paused), interactionOf(paused).id, "allow_once");
    expect(lastOf(resumed).case).toBe("finished");
    await test.until((status) => status.activeRuns === 0);
    const after = await metricsOf();
    expect(after.value("switchboard_intern_paused_runs")).toBe(0);
    expect(after.value("switchboard_intern_interactions_total", { outcome: "answered" })).toBe(1);
    // The process defaults come along, event-loop delay included.
    expect(after.names).toContain("nodejs_eventloop_lag_p99_seconds");
  });

  it("serves nothing else on the metrics address", async () => {
    expect((await fetch(test.host.metricsUrl!.replace(/\/metrics$/, "/"))).status).toBe(404);
  });
});

describe("intern host metrics of expired questions", () => {
  it("counts a question whose deadline passed as expired", async () => {
    const test = await startTestHost(scriptedAgentCommand(), { interactionDeadlineSeconds: 0.5, metricsListen: { host: "127.0.0.1", port: 0 } });
    try {
      const paused = await test.start("permission Deploy", { mode: "manual" });
      expect(lastOf(paused).case).toBe("paused");
      await test.until((status) => status.activeRuns === 0);
      const after = await scrape(test.host.metricsUrl!);
      expect(after.value("switchboard_intern_interactions_total", { outcome: "expired" })).toBe(1);
      expect(after.value("switchboard_intern_interactions_total", { outcome: "answered" })).toBe(0);
      expect(after.value("switchboard_intern_paused_runs")).toBe(0);
    } finally {
      await test.close();
    }
  });
});

describe("embedded intern host metrics", () => {
  it("registers in the registry it is given (the gateway's) and opens no listener of its own", async () => {
    const registry = new Registry();
    const test = await startTestHost(scriptedAgentCommand(), { metricsRegistry: registry });
    try {
      expect(test.host.metricsUrl).toBeUndefined();
      const paused = await test.start("permission Deploy", { mode: "manual" });
      expect(lastOf(paused).case).toBe("paused");
      const samples = parsePrometheusText(await registry.metrics());
      expect(samples.find((sample) => sample.name === "switchboard_intern_paused_runs")?.value).toBe(1);
    } finally {
      await test.close();
    }
  });
});
