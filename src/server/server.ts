import type { ConnectRouter, ConnectRouterOptions, Interceptor } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { DescFile } from "@bufbuild/protobuf";
import { file_grpc_health_v1_health, Health } from "../gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection, ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { file_switchboard_admin_v1_admin } from "../gen/switchboard/admin/v1/admin_pb.js";
import { file_switchboard_v1_chat } from "../gen/switchboard/v1/chat_pb.js";
import { file_switchboard_v1_error } from "../gen/switchboard/v1/error_pb.js";
import { file_switchboard_v1_organization } from "../gen/switchboard/v1/organization_pb.js";
import { file_switchboard_v1_speech } from "../gen/switchboard/v1/speech_pb.js";
import { file_switchboard_v1_video } from "../gen/switchboard/v1/video_pb.js";
import { createAuthInterceptor } from "../core/auth-interceptor.js";
import { createCallObserver } from "../core/call-observer.js";
import { createTracingInterceptor } from "../core/call-tracing.js";
import { createCoreRoutes } from "../core/core-routes.js";
import { createKeyCache } from "../core/key-cache.js";
import { createInternDirectory } from "../core/chat/intern-directory.js";
import { createMemberDirectory } from "../core/member-directory.js";
import { invalidateOnChange } from "../core/cache-invalidation.js";
import { createInternHostClients } from "../core/chat/intern-host-clients.js";
import { createRateLimiter } from "../core/rate-limiter.js";
import { startSpeechChargeSweep } from "../core/speech/speech-charge-sweep.js";
import { registerChatRoute } from "../bridge/chat-route.js";
import { registerSpeechRoute } from "../bridge/speech-route.js";
import { registerVideoRoutes } from "../bridge/video-routes.js";
import { createSpeechModelRegistry, loadSpeechModels } from "../providers/speech/index.js";
import { createSecretBox } from "../store/secret-box.js";
import { openStore, type Store } from "../store/store.js";
import type { BridgeOptions } from "../bridge/bridge-plugin.js";
import { resolveAdminToken } from "./admin-token.js";
import { resolveSecretsKey } from "./secrets-key.js";
import { connectRedis } from "./redis-client.js";
import { bootstrapTenant, type BootstrapTenant } from "./bootstrap.js";
import type { ServerConfig } from "./config.js";
import { createCallRecorder } from "./call-recorder.js";
import { createGrpcListener } from "./grpc-listener.js";
import { startEmbeddedInternHost } from "./embedded-intern-host.js";
import { createHealthService } from "./health-service.js";
import { createInProcessTransport } from "./in-process-transport.js";
import { createHttpListener } from "./http-listener.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createReflectionService } from "./reflection-service.js";
import { startVideo } from "./start-video.js";
import { startTracing } from "./tracing.js";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";

/** The protobuf files served through reflection. */
const servedFiles: readonly DescFile[] = [
  file_switchboard_v1_chat,
  file_switchboard_v1_video,
  file_switchboard_v1_speech,
  file_switchboard_v1_organization,
  file_switchboard_v1_error,
  file_switchboard_admin_v1_admin,
  file_grpc_health_v1_health,
  file_grpc_reflection_v1_reflection,
];

/** A running `switchboard serve`. */
export interface RunningServer {
  httpUrl: string;
  grpcUrl: string;
  store: Store;
  metrics: Metrics;
  adminToken: string;
  /** Set when this start bootstrapped a development tenant. */
  bootstrap?: BootstrapTenant;
  /** Graceful: stop accepting, let streams finish up to the grace, close. */
  close(): Promise<void>;
}

/** Time between draining streams and aborting every handler at shutdown. */
const drainMarginMs = 500;

/** Largest request body any route accepts; the chat route's own limit is 1 MiB. */
const maxBodyBytes = 1024 * 1024;

/** The composition root: builds every part from the config and starts both listeners. */
/** What a server is started with besides its configuration. */
export interface StartServerOptions {
  /** Receives every span instead of the OTLP exporter (tests). */
  spanExporter?: SpanExporter;
}

export async function startServer(config: ServerConfig, logger: Logger, options: StartServerOptions = {}): Promise<RunningServer> {
  const secrets = createSecretBox(resolveSecretsKey(config.secretsKey, { dataDir: config.dataDir, embedded: !config.databaseUrl }));
  if (!secrets.sealing) {
    logger.warn("intern host tokens and webhook signing secrets are stored unencrypted: set the same SECRETS_KEY on every replica to seal them");
  }
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    secrets,
    // Until the listener is back, other replicas' changes reach this one through the caches' TTL.
    onChangeNoticeError: (error) => logger.warn({ err: error }, "change notices between replicas are interrupted; cached keys and interns refresh within 5 s meanwhile"),
  });
  const cleanups: (() => Promise<unknown>)[] = [() => store.close()];
  try {
    const embedded = !config.databaseUrl;
    let bootstrap: BootstrapTenant | undefined;
    if (embedded || config.bootstrap) bootstrap = await bootstrapTenant(store, config.dataDir, { demoIntern: embedded });

    const speechLogger = logger.child({ service: "speech" });
    // Before any listener: on the embedded store every pending charge is then a dead process's.
    const speechChargeSweep = await startSpeechChargeSweep({ store, logger: speechLogger, embedded });
    cleanups.push(() => speechChargeSweep.stop());

    const metrics = createMetrics({ videoJobs: () => store.videoJobs.countUnfinished() });
    const demoHost = embedded && config.embeddedInternHost ? await startEmbeddedInternHost(store, config.dataDir, logger, metrics.registry) : undefined;
    if (demoHost) cleanups.push(() => demoHost.close());

    const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : undefined;
    if (redis) cleanups.push(() => redis.quit());
    const adminToken = resolveAdminToken(config.adminToken, config.dataDir);
    const speechModels = createSpeechModelRegistry(await loadSpeechModels(config.modelsFile), { espeak: { size: config.speechWorkers } });
    cleanups.push(() => speechModels.close());
    // Warming eSpeak takes both cores for several seconds: not ready until it is over.
    let speechWarm = false;
    void speechModels.warmedUp().then(() => (speechWarm = true));
    const tracing = startTracing(config.tracing, options.spanExporter);
    cleanups.push(() => tracing.shutdown());
    const video = await startVideo(config, store, logger, metrics, tracing.tracer, redis);
    cleanups.push(() => video.close());
    const keys = createKeyCache((hash) => store.apiKeys.findByHash(hash), { ttlMs: 5_000, maxEntries: 50_000 });
    const interns = createInternDirectory(store, { ttlMs: 5_000, maxEntries: 50_000 });
    // A page holds up to 100 members: 1,000 pages bound the cache to a few MiB.
    const members = createMemberDirectory(store, { ttlMs: 5_000, maxEntries: 1_000 });
    invalidateOnChange(store.changes.subscribe, { keys, interns, members });
    // The observer comes first so it also sees the auth interceptor's refusals.
    const interceptors: Interceptor[] = [
      createCallObserver(createCallRecorder(metrics, logger)),
      createTracingInterceptor(tracing.tracer, { recording: tracing.recording }),
      createAuthInterceptor({ keys, adminToken }),
    ];
    // At the end of the grace period open chat streams are drained (ended with
    // a well-formed error chunk); a moment later every handler is aborted.
    const drain = new AbortController();
    const shutdown = new AbortController();
    const routerOptions: ConnectRouterOptions = { interceptors, shutdownSignal: shutdown.signal, readMaxBytes: maxBodyBytes + 64 * 1024 };

    const hosts = createInternHostClients();
    cleanups.push(async () => hosts.close());
    const coreRoutes = createCoreRoutes({
      store,
      webhookAllowPrivate: config.webhookAllowPrivate,
      interns,
      members,
      tracer: tracing.tracer,
      chat: {
        hosts,
        limiter: createRateLimiter({ name: "chat", points: config.chatTurnsPerMinute, durationSeconds: 60, redis }),
        heartbeatMs: config.heartbeatMs,
        requestTimeoutMs: config.internRequestTimeoutMs,
        namespace: config.namespace,
        drainSignal: drain.signal,
        onTurnEnd: (finish, reason) => metrics.chatTurns.inc({ finish, reason }),
      },
      speech: {
        registry: speechModels,
        limiter: createRateLimiter({ name: "speech", points: config.speechRequestsPerMinute, durationSeconds: 60, redis }),
        logger: speechLogger,
        onSynthesis: (open) => metrics.speechSyntheses.inc(open ? 1 : -1),
        onRealTimeFactor: (model, factor) => metrics.speechRealTimeFactor.observe({ model }, factor),
      },
      video: video.service,
    });
    const serving = { serving: true };
    const serviceNames = servedFiles.flatMap((file) => file.services.map((service) => service.typeName));
    const routes = (router: ConnectRouter) => {
      coreRoutes(router);
      router.service(Health, createHealthService(serviceNames, serving));
      router.service(ServerReflection, createReflectionService(servedFiles, serviceNames));
    };
    const bridgeTransport = createInProcessTransport(coreRoutes, { interceptors, shutdownSignal: shutdown.signal });
    const bridgeRoutes: BridgeOptions["routes"] = [
      (app, transport) => registerChatRoute(app, transport, (open) => metrics.openStreams.inc(open ? 1 : -1)),
      registerSpeechRoute,
      registerVideoRoutes,
    ];

    const http: FastifyInstance = await createHttpListener({
      logger,
      metrics,
      routes,
      routerOptions,
      bridgeTransport,
      bridgeRoutes,
      bodyLimit: maxBodyBytes,
      isReady: async () => serving.serving && speechWarm && (await store.db.query("SELECT 1")).length === 1,
    });
    await http.listen({ port: config.port, host: config.host });
    cleanups.push(() => http.close());
    const grpc = createGrpcListener(routes, routerOptions);
    const grpcPort = await grpc.listen(config.grpcPort, config.host);
    cleanups.push(() => grpc.close(config.shutdownGraceMs));

    const address = http.server.address();
    const httpPort = typeof address === "object" && address ? address.port : config.port;
    const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
    let closing: Promise<void> | undefined;
    return {
      httpUrl: `http://${hostForUrl}:${httpPort}`,
      grpcUrl: `http://${hostForUrl}:${grpcPort}`,
      store,
      metrics,
      adminToken,
      bootstrap,
      close: () =>
        (closing ??= (async () => {
          serving.serving = false;
          const drainTimer = setTimeout(() => drain.abort(), config.shutdownGraceMs);
          const cut = setTimeout(() => {
            shutdown.abort();
            // A client that neither reads nor disconnects would hold close() forever.
            http.server.closeAllConnections();
          }, config.shutdownGraceMs + drainMarginMs);
          try {
            await Promise.all([http.close(), grpc.close(config.shutdownGraceMs + drainMarginMs * 2)]);
          } finally {
            clearTimeout(drainTimer);
            clearTimeout(cut);
            shutdown.abort();
            await redis?.quit().catch(() => undefined);
            await speechModels.close();
            await video.close();
            await speechChargeSweep.stop();
            hosts.close();
            await demoHost?.close();
            await tracing.shutdown().catch(() => undefined);
            await store.close();
          }
        })()),
    };
  } catch (error) {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    throw error;
  }
}
