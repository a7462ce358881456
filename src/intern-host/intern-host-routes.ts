import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  AnswerInteractionResponseSchema,
  CancelRunResponseSchema,
  InternHostService,
  StartRunResponseSchema,
} from "../gen/switchboard/host/v1/host_pb.js";
import { createBearerAuth } from "./bearer-auth.js";
import { resolveHostOptions, type InternHostRoutesOptions } from "./host-options.js";
import { createHostMetrics } from "./host-metrics.js";
import { createRunCoordinator } from "./run-coordinator.js";

/**
 * An intern host without a listener: the gateway embeds one in-process (the
 * `demo` intern) by passing `routes` to its own router, and the standalone
 * host serves the same routes on its own port.
 */
export interface InternHostRoutes {
  /** Registers InternHostService, token check included. */
  readonly routes: (router: ConnectRouter) => void;
  /**
   * Starts the agent now instead of with the first run, so the first turn
   * does not wait for it (an agent run through npx may install itself
   * first). Rejects when the start fails; the agent is retried with backoff.
   */
  startAgent(): Promise<void>;
  /** Ends every run (`run_ended`) and terminates the agent. */
  close(): Promise<void>;
}

/** Creates a host (agent supervisor, runs, sessions) and the Connect routes that serve it. */
export function createInternHostRoutes(options: InternHostRoutesOptions): InternHostRoutes {
  const resolved = resolveHostOptions(options);
  const authorize = createBearerAuth(resolved.token);
  // The gauges read the coordinator only when scraped, after it exists.
  const metrics =
    options.metricsRegistry &&
    createHostMetrics(options.metricsRegistry, { pausedRuns: () => coordinator.status().pausedRuns, activeRuns: () => coordinator.status().activeRuns });
  const coordinator = createRunCoordinator(resolved, { onInteractionEnded: metrics?.interactionEnded });
  const check = (context: HandlerContext) => authorize(context.requestHeader);

  return {
    routes(router) {
      router.service(InternHostService, {
        async *startRun(request, context) {
          check(context);
          for await (const event of coordinator.startRun(request, context.signal)) yield create(StartRunResponseSchema, { event });
        },
        async *answerInteraction(request, context) {
          check(context);
          for await (const event of coordinator.answerInteraction(request, context.signal)) yield create(AnswerInteractionResponseSchema, { event });
        },
        cancelRun(request, context) {
          check(context);
          coordinator.cancelRun(request.sessionId);
          return create(CancelRunResponseSchema);
        },
        getHostStatus(_request, context) {
          check(context);
          return coordinator.status();
        },
      });
    },
    startAgent: () => coordinator.startAgent(),
    close: () => coordinator.close(),
  };
}
