import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const scriptedAgentPath = fileURLToPath(new URL("./scripted-agent.ts", import.meta.url));
/** tsx's loader by absolute URL: the agent runs in another working directory, where a bare `tsx` does not resolve. */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** The `--agent` command line that runs the scripted test agent with these flags. */
export function scriptedAgentCommand(...flags: string[]): string {
  return [process.execPath, "--import", tsxLoader, scriptedAgentPath, ...flags].map(quote).join(" ");
}

function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
