import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the fake upstream received, for assertions on what was forwarded. */
export interface ReceivedSpeechRequest {
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

/** A running fake upstream. */
export interface FakeOpenAiSpeechServer {
  /** Base URL ending in `/v1`, as a models-file entry would hold. */
  readonly baseUrl: string;
  readonly requests: ReceivedSpeechRequest[];
  /** Resolves when the server notices the client closed the connection of the latest request. */
  nextClientClose(): Promise<void>;
  close(): Promise<void>;
}

/** API key the fake accepts. */
export const fakeApiKey = "sk-test-speech";
/** Bytes in each audio chunk the fake streams. */
export const fakeChunkBytes = 4800;
/** Chunks per successful response. */
export const fakeChunkCount = 5;

/**
 * Starts a test double of OpenAI's `POST /v1/audio/speech`: it checks the
 * bearer key and JSON body like the real API, streams audio in chunks with
 * pauses between them, and lets a test pick a failure through the `voice`:
 * `status-<code>` answers with that HTTP status and an OpenAI error body,
 * `hang` never answers, `stall` sends one chunk and then goes silent.
 */
export async function startFakeOpenAiSpeechServer(): Promise<FakeOpenAiSpeechServer> {
  const requests: ReceivedSpeechRequest[] = [];
  const closeWaiters: (() => void)[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (raw += chunk));
    req.on("end", () => {
      res.on("close", () => closeWaiters.splice(0).forEach((wake) => wake()));
      if (req.method !== "POST" || req.url !== "/v1/audio/speech") return sendError(res, 404, "Not found");
      if (req.headers.authorization !== `Bearer ${fakeApiKey}`) return sendError(res, 401, "Incorrect API key provided");
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return sendError(res, 400, "We could not parse the JSON body of your request.");
      }
      requests.push({ headers: req.headers, body });
      const voice = String(body.voice);
      if (typeof body.input !== "string" || body.input === "") return sendError(res, 400, "Missing required parameter: 'input'.");
      const status = /^status-(\d{3})$/.exec(voice);
      if (status) return sendError(res, Number(status[1]), `Upstream says ${status[1]} for voice ${voice}`);
      if (voice === "hang") return;
      res.writeHead(200, { "content-type": body.response_format === "mp3" ? "audio/mpeg" : "audio/pcm" });
      if (voice === "stall") {
        res.write(new Uint8Array(fakeChunkBytes));
        return;
      }
      let sent = 0;
      const sendNext = (): void => {
        res.write(new Uint8Array(fakeChunkBytes).fill(sent + 1));
        if (++sent === fakeChunkCount) {
          res.end();
          return;
        }
        const timer = setTimeout(() => {
          timers.delete(timer);
          sendNext();
        }, 20);
        timers.add(timer);
      };
      sendNext();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    nextClientClose: () => new Promise((resolve) => closeWaiters.push(resolve)),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null } }));
}
