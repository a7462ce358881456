import { describe, expect, it } from "vitest";
import { getEventListeners } from "node:events";
import { Code, ConnectError, createClient, type Interceptor, type ServiceImpl } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "../src/gen/grpc/health/v1/health_pb.js";
import { createHealthService } from "../src/server/health-service.js";
import { createInProcessTransport } from "../src/server/in-process-transport.js";

function setup(interceptors: Interceptor[] = []) {
  const shutdown = new AbortController();
  const transport = createInProcessTransport((router) => router.service(Health, createHealthService(["x.Service"], { serving: true })), { interceptors, shutdownSignal: shutdown.signal });
  return { shutdown, client: createClient(Health, transport) };
}

// A Health service whose handlers report what they see of their call's context.
function setupProbe() {
  const seen: { reason?: unknown }[] = [];
  const probe: Partial<ServiceImpl<typeof Health>> = {
    check(_request, context) {
      context.responseHeader.set("x-probe", "header");
      context.responseTrailer.set("x-probe", "trailer");
      return { status: HealthCheckResponse_ServingStatus.SERVING };
    },
    async *watch(_request, context) {
      const aborted = new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
      yield { status: HealthCheckResponse_ServingStatus.SERVING };
      await aborted;
      seen.push({ reason: context.signal.reason });
    },
  };
  const transport = createInProcessTransport((router) => router.service(Health, probe), { interceptors: [] });
  return { seen, client: createClient(Health, transport) };
}

describe("in-process transport", () => {
  it("runs the interceptors in order around the implementation, with the caller's headers", async () => {
    const order: string[] = [];
    const tag = (name: string): Interceptor => (next) => async (req) => {
      order.push(`${name}:${req.header.get("x-probe")}`);
      return next(req);
    };
    const { client } = setup([tag("outer"), tag("inner")]);
    const response = await client.check({ service: "x.Service" }, { headers: { "x-probe": "1" } });
    expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect(order).toEqual(["outer:1", "inner:1"]);
  });

  it("passes errors through as ConnectErrors, refusals from interceptors included", async () => {
    const refuse: Interceptor = () => async () => {
      throw new ConnectError("nope", Code.PermissionDenied);
    };
    const unknown = await setup().client.check({ service: "nope" }).catch((e: unknown) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
    const refused = await setup([refuse]).client.check({}).catch((e: unknown) => ConnectError.from(e));
    expect((refused as ConnectError).code).toBe(Code.PermissionDenied);
  });

  it("leaves nothing attached to the shutdown signal after calls and abandoned streams", async () => {
    const { shutdown, client } = setup();
    for (let i = 0; i < 50; i++) await client.check({});
    // Connect's client strips return() from stream iterables, so with any
    // transport a caller abandons a stream by aborting its signal.
    for (let i = 0; i < 50; i++) {
      const abandon = new AbortController();
      for await (const status of client.watch({}, { signal: abandon.signal })) {
        expect(status.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
        break;
      }
      abandon.abort();
    }
    const aborted = new AbortController();
    const stream = client.watch({}, { signal: aborted.signal })[Symbol.asyncIterator]();
    await stream.next();
    aborted.abort();
    await stream.next().catch(() => undefined);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });

  it("aborts open streams when the server shuts down", async () => {
    const { shutdown, client } = setup();
    const stream = client.watch({})[Symbol.asyncIterator]();
    await stream.next();
    shutdown.abort();
    await expect(stream.next()).resolves.toMatchObject({ done: true });
  });

  it("attaches nothing to the caller's or the server's signal for a call whose handler never watches its own", async () => {
    const caller = new AbortController();
    const during: number[] = [];
    const { shutdown, client } = setup([
      (next) => async (req) => {
        const response = await next(req);
        during.push(getEventListeners(caller.signal, "abort").length + getEventListeners(shutdown.signal, "abort").length);
        return response;
      },
    ]);
    for (let i = 0; i < 20; i++) await client.check({}, { signal: caller.signal });
    expect(during).toEqual(Array(20).fill(0));
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
  });

  it("aborts a watching handler's signal when its caller aborts, with the caller's reason, and lets go of the caller's signal", async () => {
    const { seen, client } = setupProbe();
    const caller = new AbortController();
    const stream = client.watch({}, { signal: caller.signal })[Symbol.asyncIterator]();
    await stream.next();
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(1);
    caller.abort(new Error("caller gone"));
    await stream.next().catch(() => undefined);
    expect(seen).toHaveLength(1);
    expect((seen[0].reason as Error).message).toBe("caller gone");
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
  });

  it("aborts a watching handler's signal when the call's deadline passes", async () => {
    const { seen, client } = setupProbe();
    const stream = client.watch({}, { timeoutMs: 50 })[Symbol.asyncIterator]();
    await stream.next();
    await stream.next().catch(() => undefined);
    expect(seen).toHaveLength(1);
    expect(ConnectError.from(seen[0].reason).code).toBe(Code.DeadlineExceeded);
  });

  it("hands the response headers and trailers a handler sets to the caller", async () => {
    const { client } = setupProbe();
    let header: string | null = null;
    let trailer: string | null = null;
    await client.check({}, { onHeader: (h) => (header = h.get("x-probe")), onTrailer: (t) => (trailer = t.get("x-probe")) });
    expect([header, trailer]).toEqual(["header", "trailer"]);
  });
});
