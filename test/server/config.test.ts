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
