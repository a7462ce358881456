import type { Tracer } from "@opentelemetry/api";
import { randomBytes, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { createRateLimiter } from "../core/rate-limiter.js";
import { defineVideoQueues } from "../core/video/video-queues.js";
import type { VideoServiceOptions } from "../core/video/video-service.js";
import { startVideoWorkers } from "../core/video/video-workers.js";
import { loadVideoModels } from "../providers/video/index.js";
import { createWebhookSender } from "../providers/webhook/index.js";
import { createJobQueue } from "../store/job-queue.js";
import type { Store } from "../store/store.js";
import type { ServerConfig } from "./config.js";
import type { Metrics } from "./metrics.js";

/** Video generation as the server runs it: the service's dependencies, and how to stop the workers. */
export interface RunningVideo {
  service: Omit<VideoServiceOptions, "store" | "tracer">;
  /** Hands running jobs back to the queue, stops the workers and the queue, closes the providers. */
  close(): Promise<void>;
}

/**
 * Composes video generation from the config: the models (embedded
 * `local/test-pattern` plus the models file), the job queue on the store's
 * database, the webhook sender, and this replica's workers. A replica on the
 * embedded store is the only one, so at start it requeues every unfinished
 * job at once instead of waiting for leases to lapse.
 */
export async function startVideo(config: ServerConfig, store: Store, logger: Logger, metrics: Metrics, tracer: Tracer, redis?: Redis): Promise<RunningVideo> {
  const log = logger.child({ service: "video" });
  const models = await loadVideoModels(config.modelsFile);
  const closing: (() => Promise<void>)[] = [() => models.close()];
  const close = async () => {
    for (const step of closing.splice(0).reverse()) await step();
  };
  try {
    const queue = await createJobQueue({ db: store.db, databaseUrl: config.databaseUrl, onError: (error) => log.error({ err: error }, "job queue error") });
    // Stopping a queue that never started still closes its own pool.
    closing.push(() => queue.stop());
    await queue.start();
    await defineVideoQueues(queue, config.videoJobTtlSeconds);
    const sender = createWebhookSender({
      allowPrivate: config.webhookAllowPrivate,
      ...(config.webhookCaFile && { ca: readCaFile(config.webhookCaFile) }),
    });
    const workers = await startVideoWorkers({
      store,
      queue,
      models,
      sender,
      dataDir: config.dataDir,
      workers: config.videoWorkers,
      leaseSeconds: config.videoJobLeaseSeconds,
      // Unique per start, so two replicas in one process (tests) are told apart too.
      owner: `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`,
      recoverAllAtStart: !config.databaseUrl,
      logger: log,
      onJobFinished: (status, seconds) => metrics.videoJobDuration.observe({ status }, seconds),
      onWebhookOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
      tracer,
    });
    closing.push(() => workers.stop());
    return {
      service: {
        models,
        queue,
        limiter: createRateLimiter({ name: "video", points: config.videoSubmitsPerMinute, durationSeconds: 60, redis }),
        dataDir: config.dataDir,
        ttlSeconds: config.videoJobTtlSeconds,
        logger: log,
        allowPrivateDestinations: config.webhookAllowPrivate,
      },
      close,
    };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/**
 * The PEM certificates of `WEBHOOK_CA_FILE`. TLS takes a file without one
 * (a key, DER bytes) silently, and every delivery would fail much later.
 */
function readCaFile(path: string): string {
  const pem = readFileSync(path, "utf8");
  const certificates = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length === 0) throw new Error(`WEBHOOK_CA_FILE ${path} holds no PEM certificate.`);
  for (const certificate of certificates) {
    try {
      new X509Certificate(certificate);
    } catch (error) {
      throw new Error(`WEBHOOK_CA_FILE ${path} holds a certificate that does not parse: ${(error as Error).message}`);
    }
  }
  return pem;
}
