import type { Readable, Writable } from "node:stream";
import { methods, type AnyMessage, type Stream } from "@agentclientprotocol/sdk/unstable";

/**
 * The name `session/update` notifications carry inside this process only.
 * The SDK's client parses every `session/update` against its full schema for
 * its session helpers (which the host does not use) before any handler runs;
 * under a name of its own the notification reaches the host's own reader
 * instead, still in arrival order with every other message.
 */
export const localSessionUpdate = "_switchboard/session_update";

/** Options for {@link createAgentStdioStream}. */
export interface AgentStdioStreamOptions {
  /** Called for a line that is not a JSON object (agents sometimes print to stdout); the line is skipped. */
  onInvalidLine(line: string): void;
}

/** Longest line accepted from the agent, as the SDK's own NDJSON framing allows. */
const maxLineCharacters = 32 * 1024 * 1024;
/** Parsed messages buffered before the agent's stdout is paused. */
const highWaterMessages = 256;

/**
 * Frames ACP over the agent's stdio as newline-delimited JSON, straight from
 * Node streams into the SDK's message stream. It does what the SDK's
 * `ndJsonStream` does for us, with one web stream instead of three per
 * message: streamed chunks are the host's hot path.
 */
export function createAgentStdioStream(stdout: Readable, stdin: Writable, options: AgentStdioStreamOptions): Stream {
  let partial = "";
  const readable = new ReadableStream<AnyMessage>(
    {
      start(controller) {
        stdout.setEncoding("utf8");
        stdout.on("data", (text: string) => {
          const lines = (partial + text).split("\n");
          partial = lines.pop() ?? "";
          if (partial.length > maxLineCharacters) {
            controller.error(new Error("The agent sent a message longer than 32 MiB."));
            stdout.destroy();
            return;
          }
          for (const line of lines) {
            const message = parseLine(line, options);
            if (message) controller.enqueue(message);
          }
          if ((controller.desiredSize ?? 1) <= 0) stdout.pause();
        });
        stdout.once("end", () => {
          const message = parseLine(partial, options);
          if (message) controller.enqueue(message);
          controller.close();
        });
        stdout.once("error", (error) => controller.error(error));
      },
      pull() {
        stdout.resume();
      },
      cancel() {
        stdout.destroy();
      },
    },
    { highWaterMark: highWaterMessages },
  );
  const writable = new WritableStream<AnyMessage>({
    write(message) {
      return new Promise<void>((resolve, reject) => {
        stdin.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
      });
    },
    close() {
      stdin.end();
    },
    abort() {
      stdin.destroy();
    },
  });
  return { readable, writable };
}

function parseLine(line: string, options: AgentStdioStreamOptions): AnyMessage | undefined {
  const trimmed = line.trim();
  if (trimmed === "") return undefined;
  let message: unknown;
  try {
    message = JSON.parse(trimmed);
  } catch {
    options.onInvalidLine(trimmed);
    return undefined;
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    options.onInvalidLine(trimmed);
    return undefined;
  }
  const record = message as AnyMessage & { method?: string; id?: unknown };
  if (record.method === methods.client.session.update && !("id" in record)) record.method = localSessionUpdate;
  return record;
}
