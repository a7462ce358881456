import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../gen/grpc/health/v1/health_pb.js";

/** Whether the process serves; flips to false when shutdown begins. */
export interface ServingState {
  serving: boolean;
}

/**
 * grpc.health.v1: SERVING for the whole server ("") and each named service
 * until shutdown starts, so load balancers drain this replica first.
 */
export function createHealthService(serviceNames: readonly string[], state: ServingState): ServiceImpl<typeof Health> {
  const known = new Set(["", ...serviceNames]);
  const statusOf = (service: string) => {
    if (!known.has(service)) throw new ConnectError(`unknown service ${service}`, Code.NotFound);
    return state.serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };
  return {
    check: (request) => ({ status: statusOf(request.service) }),
    list: () => ({ statuses: Object.fromEntries([...known].map((name) => [name, { status: statusOf(name) }])) }),
    // The protocol streams SERVICE_UNKNOWN for an unknown service rather than failing the watch.
    async *watch(request, context) {
      const current = () => (known.has(request.service) ? statusOf(request.service) : ServingStatus.SERVICE_UNKNOWN);
      let last = current();
      yield { status: last };
      while (!context.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        const now = current();
        if (now !== last) yield { status: (last = now) };
      }
    },
  };
}
