import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveHostOptions } from "../../src/intern-host/host-options.js";

describe("intern host options", () => {
  it("refuses an agent working directory that does not exist or is a file, naming it", () => {
    const dir = mkdtempSync(join(tmpdir(), "switchboard-host-options-"));
    const file = join(dir, "not-a-dir");
    writeFileSync(file, "");
    for (const cwd of [join(dir, "missing"), file]) {
      expect(() => resolveHostOptions({ token: "t", agent: "agent", cwd })).toThrow(`the agent's working directory ${cwd} is not a directory.`);
    }
    expect(resolveHostOptions({ token: "t", agent: "agent", cwd: dir }).cwd).toBe(dir);
  });
});
