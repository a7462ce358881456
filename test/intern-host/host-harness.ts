import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, ConnectError, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ErrorDetailSchema } from "../../src/gen/switchboard/v1/error_pb.js";
import { InternHostService, type RunEvent } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { startInternHost, type InternHostOptions, type RunningInternHost } from "../../src/intern-host/intern-host.js";

/** A host on a free port with a gRPC client that carries its token. */
export interface TestHost {
  readonly host: RunningInternHost;
  readonly client: Client<typeof InternHostService>;
  readonly token: string;
  /** Starts a run and reads its stream to the end. */
  start(prompt: string, options?: { sessionId?: string; mode?: "manual" | "self-drive"; signal?: AbortSignal }): Promise<RunEvent[]>;
  answer(sessionId: string, interactionId: string, answer: string): Promise<RunEvent[]>;
  /** Polls GetHostStatus until `check` holds (runs end asynchronously after a cancel). */
  until(check: (status: { activeRuns: number; pausedRuns: number; agentReady: boolean }) => boolean): Promise<void>;
  close(): Promise<void>;
}

/** Starts a host in front of `agent` with test-friendly options. */
export async function startTestHost(agent: string, options: Partial<InternHostOptions> = {}): Promise<TestHost> {
  const token = "test-token-" + Math.random().toString(36).slice(2);
  const host = await startInternHost({ port: 0, token, agent, cwd: scratchDir(), ...options });
  const transport = createGrpcTransport({ baseUrl: host.url });
  const client = createClient(InternHostService, transport);
  const headers = { authorization: `Bearer ${token}` };
  const collect = async (stream: AsyncIterable<{ event?: RunEvent }>) => {
    const events: RunEvent[] = [];
    for await (const message of stream) events.push(message.event!);
    return events;
  };
  return {
    host,
    client,
    token,
    start: (prompt, { sessionId, mode = "self-drive", signal } = {}) =>
      collect(client.startRun({ prompt, sessionId, approvalMode: mode }, { headers, signal })),
    answer: (sessionId, interactionId, answer) => collect(client.answerInteraction({ sessionId, interactionId, answer }, { headers })),
    async until(check) {
      for (;;) {
        const status = await client.getHostStatus({}, { headers });
        if (check(status)) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => host.close(),
  };
}

/** Starts a run, reads it up to its first content event, and leaves the rest of the stream to `done`. */
export async function startStreaming(test: TestHost, prompt: string, sessionId?: string): Promise<{ session: string; done: Promise<RunEvent[]> }> {
  const events: RunEvent[] = [];
  const stream = test.client.startRun({ prompt, sessionId, approvalMode: "self-drive" }, { headers: { authorization: `Bearer ${test.token}` } });
  const iterator = stream[Symbol.asyncIterator]();
  for (;;) {
    const { value } = await iterator.next();
    events.push(value!.event!);
    if (value!.event!.kind.case === "content") break;
  }
  const done = (async () => {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value.event!);
    return events;
  })();
  return { session: sessionOf(events), done };
}

/** A fresh directory for gates and agent working directories. */
export function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), "intern-host-test-"));
}

/** Creates the file a scripted agent's `wait PATH` is waiting for. */
export function openGate(path: string): void {
  writeFileSync(path, "");
}

/** The catalogue reason and HTTP status a host error carries. */
export function errorOf(error: unknown): { status: number; reason: string; message: string } {
  if (!(error instanceof ConnectError)) throw error;
  const detail = error.findDetails(ErrorDetailSchema)[0];
  return { status: detail?.httpStatus ?? 0, reason: detail?.reason ?? "", message: error.rawMessage };
}

/** Runs `call` and returns the error it must fail with. */
export async function failureOf(call: () => Promise<unknown>): Promise<{ status: number; reason: string; message: string }> {
  try {
    await call();
  } catch (error) {
    return errorOf(error);
  }
  throw new Error("expected the call to fail");
}

/** The text of the content events, joined. */
export function contentOf(events: RunEvent[]): string {
  return events.flatMap((event) => (event.kind.case === "content" ? [event.kind.value] : [])).join("");
}

/** The last event, which ends every stream. */
export function lastOf(events: RunEvent[]): RunEvent["kind"] {
  return events[events.length - 1].kind;
}

/** The interaction a paused stream carries, with its arguments parsed. */
export function interactionOf(events: RunEvent[]): { id: string; kind: string; arguments: Record<string, unknown> } {
  const event = events.find((candidate) => candidate.kind.case === "interaction");
  if (event?.kind.case !== "interaction") throw new Error("no interaction in the stream");
  return { id: event.kind.value.id, kind: event.kind.value.kind, arguments: JSON.parse(event.kind.value.arguments) };
}

/** The session id from the `started` event that opens every stream. */
export function sessionOf(events: RunEvent[]): string {
  const first = events[0];
  if (first?.kind.case !== "started") throw new Error("the stream did not open with started");
  return first.kind.value.sessionId;
}
