import type { Logger } from "pino";
import type { CallObserver } from "../core/call-observer.js";
import type { Metrics } from "./metrics.js";

/**
 * Records every core call in the RPC metrics and writes the one log line of
 * calls made on the gRPC listener. A call made by an HTTP request (bridge or
 * Connect on the HTTP listener) hands its fields to that request instead, whose
 * line the HTTP listener writes when the response ends: one line per request.
 */
export function createCallRecorder(metrics: Metrics, logger: Logger): CallObserver {
  return {
    callEnded(record, http) {
      metrics.rpcRequests.observe({ service: record.service, method: record.method, code: record.code, reason: record.reason }, record.seconds);
      if (record.unexpectedError !== undefined) {
        logger.error({ err: record.unexpectedError, rpc: `${record.service}/${record.method}`, request_id: record.requestId, org_id: record.orgId }, "unexpected error; the caller was told only that it is internal");
      }
      if (http) {
        Object.assign(http, { service: record.service, method: record.method, reason: record.reason, orgId: record.orgId, generationId: record.generationId ?? http.generationId });
        return;
      }
      logger.info(
        {
          request_id: record.requestId ?? crypto.randomUUID(),
          route: `/${record.service}/${record.method}`,
          code: record.code,
          status: record.status,
          reason: record.reason || undefined,
          org_id: record.orgId,
          generation_id: record.generationId,
          ms: Math.round(record.seconds * 1000),
        },
        "request",
      );
    },
  };
}
