import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { createContextValues, type ConnectRouter, type ConnectRouterOptions, type Transport } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { Logger } from "pino";
import { bridgePlugin, type BridgeOptions } from "../bridge/bridge-plugin.js";
import { answerClientError, frameworkError, maxPathParamLength } from "../bridge/framework-error.js";
import { sendError } from "../bridge/send-error.js";
import { replyReason } from "../bridge/reply-reason.js";
import { callNotesOf } from "../bridge/request-call-notes.js";
import { requestCallNotesKey } from "../core/call-observer.js";
import type { Metrics } from "./metrics.js";

/** Options for {@link createHttpListener}. */
export interface HttpListenerOptions {
  logger: Logger;
  metrics: Metrics;
  routes: (router: ConnectRouter) => void;
  routerOptions: ConnectRouterOptions;
  bridgeTransport: Transport;
  bridgeRoutes: BridgeOptions["routes"];
  /** Resolves when the process can take traffic (for /readyz). */
  isReady: () => Promise<boolean>;
  /** Bodies above this are refused (413) before any handler runs. */
  bodyLimit: number;
}

/** How long a client may take to send a whole request; past it, 408 `request_timeout`. */
export const requestTimeoutMs = 120_000;

/**
 * The HTTP/1.1 listener: the `/api/v1` bridge, Connect and gRPC-Web for the
 * core services, and the operational endpoints.
 */
export async function createHttpListener(options: HttpListenerOptions): Promise<FastifyInstance> {
  const stampRequestId = (request: FastifyRequest, reply: FastifyReply) => {
    if (!/^[\w.-]{1,64}$/.test(request.id)) request.id = crypto.randomUUID();
    reply.header("x-request-id", request.id);
  };
  // The request's one log line and its metrics sample.
  const recordRequest = (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const notes = callNotesOf(request);
    // The bridge's envelope reason when it refused the request, else the core call's (an in-stream failure).
    const reason = replyReason(reply) ?? notes.reason ?? "";
    options.metrics.httpRequests.observe({ route, method: request.method, status: String(reply.statusCode), reason }, reply.elapsedTime / 1000);
    request.log.info(
      {
        method: request.method,
        route,
        status: reply.statusCode,
        reason: reason || undefined,
        rpc: notes.service && `${notes.service}/${notes.method}`,
        org_id: notes.orgId,
        generation_id: notes.generationId,
        ms: Math.round(reply.elapsedTime),
      },
      "request",
    );
  };
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    // One line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    forceCloseConnections: "idle",
    bodyLimit: options.bodyLimit,
    // Fastify turns off Node's bound on receiving a request; without one a
    // client trickling a body holds it in memory for as long as it likes.
    // Two minutes carry the largest body (16 MiB) at about 1 Mbit/s.
    requestTimeout: requestTimeoutMs,
    requestIdHeader: "x-request-id",
    // Any client may send an id; keep it short and printable.
    genReqId: () => crypto.randomUUID(),
    routerOptions: { maxParamLength: maxPathParamLength },
    // Refusals made before routing (bad percent-encoding, an overlong id) and by Node's parser get the envelope
    // too. No hook runs for the former, so they get their id, log line and metrics sample here.
    frameworkErrors: (error, request, reply) => {
      stampRequestId(request, reply);
      reply.raw.once("finish", () => recordRequest(request, reply));
      return sendError(reply, frameworkError(error, request) ?? error);
    },
    clientErrorHandler: answerClientError,
  });
  app.addHook("onRequest", (request, reply, done) => {
    stampRequestId(request, reply);
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    recordRequest(request, reply);
    done();
  });
  await app.register(fastifyConnectPlugin, {
    ...options.routerOptions,
    routes: options.routes,
    contextValues: (request) => createContextValues().set(requestCallNotesKey, callNotesOf(request)),
  });
  await app.register(bridgePlugin, { prefix: "/api/v1", transport: options.bridgeTransport, routes: options.bridgeRoutes });
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => {
    const ready = await options.isReady().catch(() => false);
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "not ready" });
  });
  app.get("/metrics", async (_request, reply) => {
    reply.type(options.metrics.registry.contentType);
    return options.metrics.registry.metrics();
  });
  return app;
}
