import http from "node:http";

/** A POST (or GET) to an SSE endpoint. */
export interface SseRequest {
  url: URL;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

/** What one response carried, read as cheaply as a client can: raw bytes and the count of events. */
export interface RecordedSse {
  status: number;
  /** Events (blocks ended by a blank line), `[DONE]` and comments included. */
  events: number;
  bytes: number;
  body: Buffer[];
  /** hrtime when the request was sent and when the response ended. */
  sentNs: bigint;
  endedNs: bigint;
}

const blankLine = Buffer.from("\n\n");

/**
 * A keep-alive HTTP/1.1 agent for bench clients: one socket per concurrent
 * stream, reused across streams, as a browser or SDK pool would.
 */
export function createBenchAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });
}

function send(agent: http.Agent, request: SseRequest): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request(request.url, { agent, method: request.method ?? "POST", headers: request.headers }, resolve);
    req.once("error", reject);
    req.end(request.body);
  });
}

async function refusal(response: http.IncomingMessage): Promise<Error> {
  let text = "";
  for await (const piece of response) text += piece;
  return new Error(`HTTP ${response.statusCode}: ${text.slice(0, 500)}`);
}

/**
 * Reads a whole SSE response keeping its raw bytes and counting events by
 * their blank-line ends, without parsing them: the throughput client, which
 * must not be what limits a stream.
 */
export async function recordSse(agent: http.Agent, request: SseRequest): Promise<RecordedSse> {
  const sentNs = process.hrtime.bigint();
  const response = await send(agent, request);
  if (response.statusCode !== 200) throw await refusal(response);
  const body: Buffer[] = [];
  let events = 0;
  let bytes = 0;
  let lastByte = 0;
  for await (const piece of response as AsyncIterable<Buffer>) {
    body.push(piece);
    bytes += piece.length;
    if (lastByte === 0x0a && piece[0] === 0x0a) events++;
    for (let at = piece.indexOf(blankLine); at >= 0; at = piece.indexOf(blankLine, at + 2)) events++;
    lastByte = piece[piece.length - 1];
  }
  return { status: 200, events, bytes, body, sentNs, endedNs: process.hrtime.bigint() };
}

/**
 * Reads an SSE response event by event, calling `onData` with each `data:`
 * payload as it arrives (comments skipped); resolves when the response ends.
 */
export async function readSse(agent: http.Agent, request: SseRequest, onData: (data: string) => void): Promise<void> {
  const response = await send(agent, request);
  if (response.statusCode !== 200) throw await refusal(response);
  response.setEncoding("utf8");
  let pending = "";
  for await (const piece of response as AsyncIterable<string>) {
    pending += piece;
    let end = pending.indexOf("\n\n");
    while (end >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      for (const line of block.split("\n")) if (line.startsWith("data: ")) onData(line.slice(6));
      end = pending.indexOf("\n\n");
    }
  }
}
