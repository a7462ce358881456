import { readFileSync } from "node:fs";
import type { Transport } from "@connectrpc/connect";
import { openApiSchema } from "../src/bridge/openapi-schemas.js";
import { createHttpListener } from "../src/server/http-listener.js";
import { createLogger } from "../src/server/logger.js";
import { createMetrics } from "../src/server/metrics.js";

// A reference row of bench/members-throughput.ts: Switchboard's own HTTP
// listener (request id, metrics sample, the request's log line, the bridge's
// hooks and the compiled MemberList serializer), serving the same JSON from a
// route of its own, with no core call. It shows how much of the bare route's
// rate the HTTP layer alone keeps, before auth and the core.
const [port, bodyFile] = process.argv.slice(2);
const body = JSON.parse(readFileSync(bodyFile, "utf8"));
const unused = () => {
  throw new Error("The reference route makes no core call.");
};
const app = await createHttpListener({
  // The bench's server runs at `warn` as well.
  logger: createLogger("warn"),
  metrics: createMetrics({ videoJobs: async () => ({ pending: 0, in_progress: 0 }) }),
  routes: () => {},
  routerOptions: {},
  bridgeTransport: { unary: unused, stream: unused } as Transport,
  bridgeRoutes: [(bridge) => bridge.get("/members-without-core", { schema: { response: { 200: openApiSchema("MemberList") } } }, async () => body)],
  bodyLimit: 1024 * 1024,
  isReady: async () => true,
});
await app.listen({ port: Number(port), host: "127.0.0.1" });
process.stdout.write("ready\n");
