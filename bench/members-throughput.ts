import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import Fastify from "fastify";
import { pino } from "pino";
import { loadServerConfig } from "../src/server/config.js";
import { startServer } from "../src/server/server.js";

/** Results of {@link run}: the bridge beside a bare route, same load, same run. */
export interface MembersBenchResult {
  bridge: { requestsPerSecond: number; p99Ms: number };
  bare: { requestsPerSecond: number; p99Ms: number };
  /** bridge req/s ÷ bare req/s; the target is at least 0.7. */
  ratio: number;
}

async function load(url: string, headers: Record<string, string>, seconds: number) {
  const result = await autocannon({ url, headers, connections: 32, duration: seconds });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { requestsPerSecond: Math.round(result.requests.average), p99Ms: result.latency.p99 };
}

/**
 * Member listing through the whole stack (bridge → auth interceptor with the
 * key cache warm → OrganizationService → store) beside a bare Fastify route
 * returning the same JSON, so the ratio isolates Switchboard's own cost.
 */
export async function run(seconds = Number(process.env.BENCH_SECONDS ?? 5)): Promise<MembersBenchResult> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchboard-bench-"));
  const server = await startServer(
    { ...loadServerConfig({ PORT: "0", GRPC_PORT: "0", DATA_DIR: dataDir, EMBEDDED_INTERN_HOST: "0" }), chatTurnsPerMinute: 1_000_000 },
    pino({ level: "silent" }),
  );
  const bare = Fastify();
  try {
    const key = server.bootstrap!.management_key;
    for (let i = 0; i < 20; i++) {
      await server.store.members.add({ orgId: server.bootstrap!.organization_id, email: `bench${i}@example.com`, firstName: "B", lastName: `${i}`, role: "org:member" });
    }
    const url = `${server.httpUrl}/api/v1/organization/members?limit=20`;
    const body = await (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).json();
    bare.get("/members", async () => body);
    await bare.listen({ port: 0, host: "127.0.0.1" });
    const bareUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/members`;
    await load(url, { authorization: `Bearer ${key}` }, 1); // warm-up
    const bridge = await load(url, { authorization: `Bearer ${key}` }, seconds);
    const bareResult = await load(bareUrl, {}, seconds);
    return { bridge, bare: bareResult, ratio: Number((bridge.requestsPerSecond / bareResult.requestsPerSecond).toFixed(3)) };
  } finally {
    await bare.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
