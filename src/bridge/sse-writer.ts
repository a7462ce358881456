import type { ServerResponse } from "node:http";
import { writeOrWait } from "./write-or-wait.js";

/**
 * Writes server-sent events with backpressure: a slow reader pauses the
 * stream instead of growing memory. A write to a client that has gone
 * throws, so the route stops relaying and ends the call.
 */
export function createSseWriter(response: ServerResponse) {
  const write = async (text: string) => {
    if (!(await writeOrWait(response, text))) throw new Error("the client went away");
  };
  return {
    /** Sets the status and headers; they leave with the first event, in the same packet. */
    open(headers: Record<string, string>) {
      response.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
        ...headers,
      });
    },
    data: (json: object) => write(`data: ${JSON.stringify(json)}\n\n`),
    comment: (text: string) => write(`: ${text}\n\n`),
    async done() {
      await write("data: [DONE]\n\n");
      response.end();
    },
  };
}
