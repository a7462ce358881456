import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { bundleWorkerModule } from "../../src/providers/speech/worker-module.js";

describe("worker module", () => {
  it("bundles a TypeScript entry with its project imports and keeps packages as imports by absolute URL", async () => {
    const url = await bundleWorkerModule(new URL("../support/bundled-worker-fixture.ts", import.meta.url));
    expect(url.protocol).toBe("data:");
    const code = decodeURIComponent(url.pathname.slice(url.pathname.indexOf(",") + 1));
    expect(code).toContain("function createPcmResampler");
    expect(code).toMatch(/from "file:\/\/\/[^"]*\/node_modules\/@bufbuild\/protobuf\//);
    expect(code).not.toMatch(/from "@bufbuild\/protobuf"/);

    const worker = new Worker(url);
    try {
      const [message] = await once(worker, "message");
      expect(message).toEqual({ samples: 24000, agentName: "fixture" });
    } finally {
      await worker.terminate();
    }
  });
});
