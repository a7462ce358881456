import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { createCallRecorder } from "../../src/server/call-recorder.js";
import { createMetrics } from "../../src/server/metrics.js";

describe("the call recorder", () => {
  it("logs an unexpected error with its stack, which the caller was not shown", async () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    const recorder = createCallRecorder(createMetrics({ videoJobs: async () => ({ pending: 0, in_progress: 0 }) }), pino({ level: "info" }, stream));
    const bug = new TypeError("store column missing");
    const record = { service: "switchboard.admin.v1.AdminService", method: "SetCredits", code: "internal", status: 500, reason: "internal", requestId: "req-1", seconds: 0.01 };
    recorder.callEnded({ ...record, unexpectedError: bug }, {});
    recorder.callEnded(record, {});
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]);
    expect(line).toMatchObject({ level: 50, rpc: "switchboard.admin.v1.AdminService/SetCredits", request_id: "req-1", err: { type: "TypeError", message: "store column missing" } });
    expect(line.err.stack).toContain("call-recorder.test.ts");
  });
});
