import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { startInternHost, type RunningInternHost } from "../intern-host/intern-host.js";
import { referenceAgentCommand } from "../intern-host/reference-agent/reference-agent-command.js";
import type { Store } from "../store/store.js";
import { bootstrapPath, demoInternId, type BootstrapTenant } from "./bootstrap.js";

/**
 * Serves the bootstrap tenant's `demo` intern from an intern host inside this
 * process, running the bundled reference agent through the same host code as
 * any other agent. The host listens on a loopback port with a fresh token
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
  const host = await startInternHost({ host: "127.0.0.1", port: 0, token, agent: referenceAgentCommand(), cwd: workspace, logger: logger.child({ component: "intern-host" }), metricsRegistry });
  if (!(await store.interns.setEndpoint(tenant.organization_id, demoInternId, host.url, token))) {
    await host.close();
    return undefined;
  }
  return host;
}
