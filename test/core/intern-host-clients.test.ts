import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { InternHostService, type StartRunResponseSchema } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { ErrorDetailSchema } from "../../src/gen/switchboard/v1/error_pb.js";
import { catalogueError } from "../../src/core/error-catalogue.js";
import { createInternHostClients, type InternHostClients } from "../../src/core/chat/intern-host-clients.js";
import { freePort } from "../support/free-port.js";
import { startHostDouble, type HostDouble } from "../support/host-double.js";

async function failureOf(stream: AsyncIterable<unknown>): Promise<ConnectError> {
  try {
    for await (const _ of stream);
  } catch (error) {
    return error as ConnectError;
  }
  throw new Error("the stream did not fail");
}

describe("intern host clients", () => {
  let clients: InternHostClients;
  const hosts: HostDouble[] = [];
  const listen = async (...args: Parameters<typeof startHostDouble>) => {
    const host = await startHostDouble(...args);
    hosts.push(host);
    return host;
  };
  afterEach(() => {
    clients?.close();
    for (const host of hosts.splice(0)) host.close();
  });

  it("streams a run's events in order, with the token and trace headers as metadata, under the endpoint's path", async () => {
    const run: MessageInitShape<typeof StartRunResponseSchema>[] = [
      { event: { seq: 1n, kind: { case: "started", value: { sessionId: "s-1" } } } },
      { event: { seq: 2n, kind: { case: "content", value: "hello" } } },
      { event: { seq: 3n, kind: { case: "finished", value: {} } } },
    ];
    let seen: { authorization: string | null; traceparent: string | null; prompt: string } | undefined;
    const host = await listen(
      {
        async *startRun(request, context) {
          seen = { authorization: context.requestHeader.get("authorization"), traceparent: context.requestHeader.get("traceparent"), prompt: request.prompt };
          yield* run;
        },
      },
      { requestPathPrefix: "/hosts/a" },
    );
    clients = createInternHostClients();
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const events = [];
    for await (const { event } of clients.get(host.url).startRun({ prompt: "hi" }, { signal: new AbortController().signal, headers: { authorization: "Bearer t0ken", traceparent } })) {
      events.push(event?.kind.case);
    }
    expect(events).toEqual(["started", "content", "finished"]);
    expect(seen).toEqual({ authorization: "Bearer t0ken", traceparent, prompt: "hi" });
  });

  it("reads a host refusal as a ConnectError carrying the host's code, message and ErrorDetail", async () => {
    const host = await listen({
      async *answerInteraction() {
        throw catalogueError("interaction_not_pending", "Nothing is waiting for that answer.");
      },
    });
    clients = createInternHostClients();
    const error = await failureOf(clients.get(host.url).answerInteraction({ sessionId: "s", interactionId: "i", answer: "allow" }, { signal: new AbortController().signal, headers: {} }));
    expect(error).toBeInstanceOf(ConnectError);
    expect(error.code).toBe(catalogueError("interaction_not_pending").code);
    expect(error.rawMessage).toBe("Nothing is waiting for that answer.");
    expect(error.findDetails(ErrorDetailSchema)[0]).toMatchObject({ reason: "interaction_not_pending", httpStatus: 409 });
  });

  it("cancels the call on the host when the signal aborts mid-stream", async () => {
    let hostSignal: AbortSignal | undefined;
    const host = await listen({
      async *startRun(_request, context) {
        hostSignal = context.signal;
        yield { event: { seq: 1n, kind: { case: "started", value: { sessionId: "s" } } } };
        await new Promise((resolve) => context.signal.addEventListener("abort", resolve));
      },
    });
    clients = createInternHostClients();
    const abort = new AbortController();
    const events = clients.get(host.url).startRun({ prompt: "wait" }, { signal: abort.signal, headers: {} })[Symbol.asyncIterator]();
    expect((await events.next()).value?.event?.kind.case).toBe("started");
    const pending = events.next();
    abort.abort();
    await expect(pending).rejects.toMatchObject({ code: Code.Canceled });
    for (let waited = 0; !hostSignal?.aborted && waited < 2_000; waited += 20) await sleep(20);
    expect(hostSignal?.aborted).toBe(true);
  });

  it("refuses turns at once while a host is down, and reaches it again once it restarts on the same port", { timeout: 30_000 }, async () => {
    const implementation = {
      async *startRun() {
        yield { event: { seq: 1n, kind: { case: "started" as const, value: { sessionId: "s" } } } };
      },
    };
    const first = await listen(implementation);
    clients = createInternHostClients();
    const client = clients.get(first.url);
    const call = () => failureOf(client.startRun({ prompt: "hi" }, { signal: new AbortController().signal, headers: {} })).then((error) => error, () => undefined);
    const succeeded = async () => {
      for await (const _ of client.startRun({ prompt: "hi" }, { signal: new AbortController().signal, headers: {} }));
    };
    await succeeded();
    const { port } = new URL(first.url);
    first.close();
    // Down for 3 s while turns keep coming: each is refused at once as
    // unavailable (the chat route's intern_unreachable), none waits.
    const downUntil = performance.now() + 3_000;
    while (performance.now() < downUntil) {
      expect((await call())?.code).toBe(Code.Unavailable);
      await sleep(200);
    }
    await listen(implementation, { port: Number(port) });
    const backAt = performance.now();
    let lastError: ConnectError | undefined;
    // The channel redials within a second or so (0.6 s here against 1.8 s
    // with grpc-js's default backoff, 2026-11-26); the bound only proves it comes back.
    while (performance.now() - backAt < 8_000) {
      lastError = await succeeded().then(() => undefined, (error: ConnectError) => error);
      if (!lastError) break;
      await sleep(100);
    }
    expect(lastError).toBeUndefined();
  });

  it("reports a host nobody listens on as unavailable", async () => {
    clients = createInternHostClients();
    const error = await failureOf(clients.get(`http://127.0.0.1:${await freePort()}`).startRun({ prompt: "hi" }, { signal: new AbortController().signal, headers: {} }));
    expect(error).toBeInstanceOf(ConnectError);
    expect(error.code).toBe(Code.Unavailable);
  });
});
