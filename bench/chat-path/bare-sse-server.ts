import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import http, { type ServerResponse } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnBenchChild, type BenchChild } from "../bench-child.js";

const thisFile = fileURLToPath(import.meta.url);

/** A running bare SSE writer in its own process. */
export type BareSseServer = BenchChild;

/**
 * Starts the baseline of the chat throughput figure in a child process (as
 * the gateway runs in one): a node:http server with no framework that answers
 * `GET /N` by writing the events of `DIR/N.sse` (a recorded chat response)
 * one `write` per event, waiting for `drain` when the socket is full, exactly
 * as the bridge's SSE writer does. Same bytes, same events, nothing upstream.
 */
export function startBareSseServer(dir: string): Promise<BareSseServer> {
  return spawnBenchChild(thisFile, [dir], "The bare SSE server");
}

async function writeEvents(response: ServerResponse, events: readonly string[]): Promise<void> {
  const write = async (text: string) => {
    if (!response.write(text) && !response.destroyed) await once(response, "drain");
  };
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    "x-request-id": crypto.randomUUID(),
  });
  for (const event of events) await write(event);
  response.end();
}

/** Each recorded response as its events, each ending with its blank line. */
function loadStreams(dir: string): Map<string, string[]> {
  const streams = new Map<string, string[]>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".sse"))) {
    const text = readFileSync(join(dir, file), "utf8");
    streams.set(`/${file.slice(0, -4)}`, text.split(/(?<=\n\n)/));
  }
  return streams;
}

async function serve(dir: string): Promise<void> {
  const streams = loadStreams(dir);
  const server = http.createServer((request, response) => {
    const events = streams.get(request.url ?? "");
    if (!events) {
      response.writeHead(404).end();
      return;
    }
    writeEvents(response, events).catch(() => response.destroy());
  });
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
  process.once("SIGTERM", () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

if (process.argv[1] === thisFile) await serve(process.argv[2]);
