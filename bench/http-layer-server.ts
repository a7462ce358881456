import { existsSync, readFileSync } from "node:fs";
import type { Transport } from "@connectrpc/connect";

// A reference row of bench/members-throughput.ts: Switchboard's own HTTP
// listener (request id, metrics sample, the request's log line, the bridge's
// hooks and the compiled MemberList serializer), serving the same JSON from a
// route of its own, with no core call. It shows how much of the bare route's
// rate the HTTP layer alone keeps, before auth and the core. Started by
// bench/bench-child.ts, to which it prints its URL.

// The same build the server under test runs (bin/switchboard.js: dist/ when built, else the sources).
const compiled = existsSync(new URL("../dist/cli/main.js", import.meta.url));
const load = <Module>(path: string) => import(new URL(compiled ? `../dist/${path}.js` : `../src/${path}.ts`, import.meta.url).href) as Promise<Module>;
const { openApiSchema } = await load<typeof import("../src/bridge/openapi-schemas.js")>("bridge/openapi-schemas");
const { createHttpListener } = await load<typeof import("../src/server/http-listener.js")>("server/http-listener");
const { createLogger } = await load<typeof import("../src/server/logger.js")>("server/logger");
const { createMetrics } = await load<typeof import("../src/server/metrics.js")>("server/metrics");

const [bodyFile] = process.argv.slice(2);
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
const url = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${JSON.stringify({ url })}\n`);
