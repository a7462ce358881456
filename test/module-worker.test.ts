import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { bundleWorkerModule } from "../src/providers/bundle-worker-module.js";
import { startModuleWorker } from "../src/providers/module-worker.js";

const fixture = new URL("./support/bundled-worker-fixture.ts", import.meta.url);

describe("module workers run from TypeScript sources", () => {
  it("bundle the entry with its project imports and keep packages as imports by absolute URL", async () => {
    const url = await bundleWorkerModule(fixture);
    expect(url.protocol).toBe("data:");
    const code = decodeURIComponent(url.pathname.slice(url.pathname.indexOf(",") + 1));
    expect(code).toContain("function createPcmResampler");
    expect(code).toMatch(/from "file:\/\/\/[^"]*\/node_modules\/@bufbuild\/protobuf\//);
    expect(code).not.toMatch(/from "@bufbuild\/protobuf/);
  });

  it("start on the bundle, with their workerData, each time they are asked for", async () => {
    for (const name of ["first", "second"]) {
      const worker = startModuleWorker(fixture, { name });
      try {
        const [message] = await once(worker, "message");
        expect(message).toEqual({ samples: 24000, agentName: name });
      } finally {
        await worker.terminate();
      }
    }
  });

  it("fail with an error event when the entry cannot be bundled, every time", async () => {
    const missing = new URL("./support/no-such-worker.ts", import.meta.url);
    for (let attempt = 0; attempt < 2; attempt++) {
      const worker = startModuleWorker(missing);
      try {
        const [error] = (await once(worker, "error")) as [Error];
        expect(error.message).toMatch(/no-such-worker\.ts/);
      } finally {
        await worker.terminate();
      }
    }
  });
});
