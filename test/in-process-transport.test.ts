import { describe, expect, it } from "vitest";
import { getEventListeners } from "node:events";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus } from "../src/gen/grpc/health/v1/health_pb.js";
import { createHealthService } from "../src/server/health-service.js";
import { createInProcessTransport } from "../src/server/in-process-transport.js";

function setup(interceptors: Interceptor[] = []) {
  const shutdown = new AbortController();
  const transport = createInProcessTransport((router) => router.service(Health, createHealthService(["x.Service"], { serving: true })), { interceptors, shutdownSignal: shutdown.signal });
  return { shutdown, client: createClient(Health, transport) };
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
});
