import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { spawnBenchChild, type BenchChild } from "../bench-child.js";
import { MinimalGrpcReader } from "../minimal-grpc-reader.js";

const thisFile = fileURLToPath(import.meta.url);

/**
 * Starts, in a process of its own, the least gateway that does the chat
 * path's necessary work: node:http reads the POST and its JSON, a minimal
 * HTTP/2 gRPC reader (`../minimal-grpc-reader.ts`) calls StartRun on the
 * host with the host token, and each run event leaves as an OpenAI-style SSE
 * chunk. No auth, no core, no validation, no metrics, no logs. Placed in the
 * gateway's spot, it shows what that work alone adds on this machine under
 * the same load, whoever writes the gateway in Node; its URL is the chat
 * completions URL to POST to.
 */
export function startBareGateway(hostUrl: string, hostToken: string): Promise<BenchChild> {
  return spawnBenchChild(thisFile, [hostUrl, hostToken], "The bare gateway");
}

/** One SSE event of a chunk, in the shape the whole path sends. */
function chunkEvent(id: string, created: number, delta: object, finishReason: string | null = null): string {
  return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: "bench/intern", choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
}

/** The gateway process itself: listens on a free loopback port, prints its URL, stops on SIGTERM. */
async function serve(hostUrl: string, hostToken: string): Promise<void> {
  const host = new MinimalGrpcReader(hostUrl);
  const headers = { authorization: `Bearer ${hostToken}` };
  let served = 0;
  const server = http.createServer(async (request, response) => {
    let body = "";
    for await (const part of request) body += part;
    const { messages } = JSON.parse(body) as { messages: { content: string }[] };
    const id = `chatcmpl-bare${served++}`;
    const created = Math.floor(Date.now() / 1000);
    const abort = new AbortController();
    response.once("close", () => abort.abort());
    const run = host.serverStream(InternHostService.method.startRun, { prompt: messages.at(-1)!.content, approvalMode: "self-drive" }, headers, ({ event }) => {
      const kind = event?.kind;
      if (kind?.case === "started") {
        response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
        response.write(chunkEvent(id, created, { role: "assistant" }));
      } else if (kind?.case === "content") response.write(chunkEvent(id, created, { content: kind.value }));
      else if (kind?.case === "finished") {
        response.write(chunkEvent(id, created, {}, "stop"));
        response.end(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: "bench/intern", choices: [], session_id: null, usage: null })}\n\ndata: [DONE]\n\n`);
      }
    }, abort.signal);
    await run.catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/chat/completions` })}\n`);
  process.once("SIGTERM", () => process.exit(0));
}

if (process.argv[1] === thisFile) {
  const [hostUrl, hostToken] = process.argv.slice(2);
  if (!hostToken) throw new Error("usage: bare-gateway.ts HOST_URL HOST_TOKEN");
  await serve(hostUrl, hostToken);
}
