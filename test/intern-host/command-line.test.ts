import { describe, expect, it } from "vitest";
import { splitCommandLine } from "../../src/intern-host/command-line.js";

describe("agent command line", () => {
  it.each([
    ["claude-agent-acp", ["claude-agent-acp"]],
    ["npx  @zed-industries/claude-agent-acp", ["npx", "@zed-industries/claude-agent-acp"]],
    ["gemini --acp", ["gemini", "--acp"]],
    [`node '/opt/my agent/main.js' --name "a \\"b\\" c"`, ["node", "/opt/my agent/main.js", "--name", 'a "b" c']],
    [`run a\\ b ''`, ["run", "a b", ""]],
  ])("splits %s", (line, argv) => {
    expect(splitCommandLine(line)).toEqual(argv);
  });

  it("rejects an unterminated quote", () => {
    expect(() => splitCommandLine(`agent "oops`)).toThrow(/Unterminated/);
  });
});
