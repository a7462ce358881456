import { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { createReferenceAgent } from "./reference-agent.js";
import { checkSandbox } from "./shell-runner.js";

// Entry point of the reference agent: ACP over stdio, for `--agent` (see referenceAgentCommand()).
const { values } = parseArgs({ options: { bubblewrap: { type: "string" }, "sandbox-only": { type: "boolean" }, hide: { type: "string", multiple: true } } });
const agent = createReferenceAgent({ sandbox: checkSandbox(values.bubblewrap), sandboxOnly: values["sandbox-only"], hidden: values.hide });
const connection = agent.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
await connection.closed;
process.exit(0);
