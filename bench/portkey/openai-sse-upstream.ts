import http from "node:http";
import type { AddressInfo } from "node:net";

/** Options for {@link startOpenAiSseUpstream}. */
export interface OpenAiSseUpstreamOptions {
  /** chat.completion.chunk events per streamed response, each carrying `chunkSize` characters of content. */
  chunks: number;
  chunkSize: number;
}

/** A running upstream; `baseUrl` ends in `/v1`, as an OpenAI base URL does. */
export interface OpenAiSseUpstream {
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * A local OpenAI-compatible `/v1/chat/completions` that streams a fixed number
 * of fixed-size chunks as fast as the socket takes them: the upstream a peer
 * gateway proxies in the comparison, and the baseline read directly.
 */
export async function startOpenAiSseUpstream(options: OpenAiSseUpstreamOptions): Promise<OpenAiSseUpstream> {
  const content = "x".repeat(options.chunkSize);
  const event = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: "bench", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const role = event({ role: "assistant", content: "" }, null);
  const chunk = event({ content }, null);
  const finish = event({}, "stop");
  const server = http.createServer((request, response) => {
    request.resume();
    request.once("end", async () => {
      if (request.method !== "POST" || !request.url?.endsWith("/chat/completions")) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      response.write(role);
      for (let i = 0; i < options.chunks && !response.destroyed; i++) {
        // Respect backpressure, as a real upstream's socket would.
        if (!response.write(chunk)) await new Promise((resolve) => response.once("drain", resolve));
      }
      response.end(`${finish}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
