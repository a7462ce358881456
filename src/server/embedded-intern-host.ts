import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { startInternHost, type RunningInternHost } from "../intern-host/intern-host.js";
import { referenceAgentCommand } from "../intern-host/reference-agent/reference-agent-command.js";
import type { Store } from "../store/store.js";
import { bootstrapPath, demoInternId, type BootstrapTenant } from "./bootstrap.js";

/**
 * Serves the bootstrap tenant's `demo` intern from an intern host inside this
 * process, running the bundled reference agent through the same host code as
 * any other agent, confined to its sandbox. The host listens on a loopback port with a fresh token
 * each start, and the intern record is pointed at it. Returns undefined when
 * there is no bootstrap tenant to serve.
 */
export async function startEmbeddedInternHost(store: Store, dataDir: string, logger: Logger, metricsRegistry: Registry): Promise<RunningInternHost | undefined> {
  let tenant: BootstrapTenant;
  try {
    tenant = JSON.parse(readFileSync(bootstrapPath(dataDir), "utf8")) as BootstrapTenant;
  } catch {
    return undefined;
  }
  const workspace = join(dataDir, "demo-workspace");
  mkdirSync(workspace, { recursive: true });
  const token = randomBytes(32).toString("base64url");
  // Its callers run shell commands on this very machine: only in the sandbox,
  // with the data directory (store, admin token, bootstrap keys, videos) and
  // the home directory hidden, and none of the gateway's environment
  // (ADMIN_TOKEN, DATABASE_URL, provider keys) in the agent's.
  const agent = referenceAgentCommand({ sandboxOnly: true, hide: [homedir(), resolve(dataDir)].filter((dir) => dir !== "/") });
  const agentEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: workspace, LANG: "C.UTF-8" };
  const host = await startInternHost({ host: "127.0.0.1", port: 0, token, agent, agentEnv, cwd: workspace, logger: logger.child({ component: "intern-host" }), metricsRegistry });
  if (!(await store.interns.setEndpoint(tenant.organization_id, demoInternId, host.url, token))) {
    await host.close();
    return undefined;
  }
  return host;
}
