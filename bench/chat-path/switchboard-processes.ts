import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freePort } from "../../test/support/free-port.js";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";
import { scriptedAgentCommand } from "../../test/support/scripted-agent-command.js";
import { guardChild, guardDirectory, releaseChild, releaseDirectory } from "./orphan-guard.js";
import { childPidsOf, isAlive, readCpuMs, readRss, type ProcessRss } from "./process-stats.js";

const runFile = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const cli = join(repoRoot, "bin", "switchboard.js");
const probe = pathToFileURL(fileURLToPath(new URL("./memory-probe.mjs", import.meta.url))).href;
/** Node flags of the spawned gateway and host: a collectable heap, and the probe that reports it. */
const probedNode = ["--expose-gc", "--import", probe];
const startBudgetMs = 90_000;
const stopBudgetMs = 15_000;

/** Options for {@link startSwitchboardProcesses}. */
export interface SwitchboardProcessesOptions {
  /** `--max-paused-runs` of the host. */
  maxPausedRuns?: number;
  /** `--interaction-deadline` of the host, seconds. */
  interactionDeadlineSeconds?: number;
  /** Flags of the scripted agent. */
  agentFlags?: string[];
  /**
   * Extra Node flags for the gateway and the host, to find where a figure
   * goes: `--cpu-prof --cpu-prof-dir DIR`, `--heapsnapshot-signal=SIGUSR2`…
   */
  diagnosticFlags?: string[];
  /** Extra environment of the gateway, over the bench's own (e.g. `HEARTBEAT_MS` for the capacity bench). */
  gatewayEnv?: Record<string, string>;
}

/** Heap of a probed process around a forced full collection. */
export interface HeapProbe {
  collected: boolean;
  before: NodeJS.MemoryUsage;
  after: NodeJS.MemoryUsage;
}

/** A gateway, an intern host and its agent, each in its own process, with the intern registered. */
export interface SwitchboardProcesses {
  httpUrl: string;
  /** The gateway's HTTP/2 listener (gRPC, Connect, gRPC-Web). */
  grpcUrl: string;
  hostUrl: string;
  hostToken: string;
  apiKey: string;
  internId: string;
  gatewayPid: number;
  hostPid: number;
  /** The scripted agent, the host's child. */
  agentPid: number;
  /** Asks a probed process for its heap around a forced collection. */
  probeHeap(which: "gateway" | "host"): Promise<HeapProbe>;
  rss(which: "gateway" | "host" | "agent"): ProcessRss | null;
  cpuMs(which: "gateway" | "host" | "agent"): number | null;
  /** Stops all three (SIGTERM, then SIGKILL past a budget) and removes the temporary directory. */
  stop(): Promise<void>;
}


/**
 * Starts `switchboard serve` (embedded store in a temporary DATA_DIR, no
 * embedded demo host, a chat rate limit out of the way) and `switchboard
 * intern-host` in front of the scripted agent as child processes on free
 * loopback ports, and registers the host as intern `bench` with the admin
 * CLI, as an operator would. Logs go to files in the temporary directory.
 */
export async function startSwitchboardProcesses(options: SwitchboardProcessesOptions = {}): Promise<SwitchboardProcesses> {
  const root = mkdtempSync(join(tmpdir(), "switchboard-chat-path-"));
  guardDirectory(root);
  const dataDir = join(root, "data");
  const workspace = join(root, "workspace");
  mkdirSync(workspace);
  const children: ChildProcess[] = [];
  let agentPid = 0;

  const stop = async () => {
    // The gateway first, so no new turn reaches the host while it closes.
    for (const child of children) await stopChild(child);
    if (agentPid && isAlive(agentPid)) process.kill(agentPid, "SIGKILL");
    releaseChild(agentPid);
    rmSync(root, { recursive: true, force: true });
    releaseDirectory(root);
  };

  const profile = options.diagnosticFlags ?? [];
  try {
    const [port, grpcPort, hostPort] = [await freePort(), await freePort(), await freePort()];
    const httpUrl = `http://127.0.0.1:${port}`;
    const gateway = spawnLogged(
      [...probedNode, ...profile, cli, "serve"],
      {
        ...process.env,
        DATA_DIR: dataDir,
        HOST: "127.0.0.1",
        PORT: String(port),
        GRPC_PORT: String(grpcPort),
        EMBEDDED_INTERN_HOST: "0",
        CHAT_TURNS_PER_MINUTE: "1000000",
        // A chat replica: video job polling on the same single-connection store stays out of the chat figures.
        VIDEO_WORKERS: "0",
        LOG_LEVEL: "info",
        ...options.gatewayEnv,
      },
      join(root, "gateway.log"),
    );
    children.push(gateway);
    const hostToken = randomBytes(18).toString("base64url");
    const hostUrl = `http://127.0.0.1:${hostPort}`;
    const host = spawnLogged(
      [
        ...probedNode,
        ...profile,
        cli,
        "intern-host",
        "--listen",
        `127.0.0.1:${hostPort}`,
        "--token",
        hostToken,
        "--agent",
        scriptedAgentCommand(...(options.agentFlags ?? [])),
        "--cwd",
        workspace,
        "--max-paused-runs",
        String(options.maxPausedRuns ?? 32),
        "--interaction-deadline",
        String(options.interactionDeadlineSeconds ?? 300),
      ],
      { ...process.env, LOG_LEVEL: "info" },
      join(root, "host.log"),
    );
    children.push(host);

    await Promise.all([untilReady(gateway, `${httpUrl}/readyz`, join(root, "gateway.log")), untilHostReady(host, hostUrl, hostToken, join(root, "host.log"))]);
    agentPid = childPidsOf(host.pid!)[0] ?? 0;
    if (!agentPid) throw new Error("The intern host reports its agent ready, but has no child process.");
    guardChild(agentPid);

    const tenant = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8")) as { organization_id: string; api_key: string };
    const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const internId = "bench";
    const admin = ["admin", "--server", httpUrl, "--token", adminToken, "intern", "add", "--org", tenant.organization_id, "--id", internId];
    await runFile(process.execPath, [cli, ...admin, "--endpoint", hostUrl, "--token", hostToken, "--state", "running"], { cwd: repoRoot });

    const pidOf = (which: "gateway" | "host" | "agent") => (which === "gateway" ? gateway.pid! : which === "host" ? host.pid! : agentPid);
    let probes = 0;
    return {
      httpUrl,
      grpcUrl: `http://127.0.0.1:${grpcPort}`,
      hostUrl,
      hostToken,
      apiKey: tenant.api_key,
      internId,
      gatewayPid: gateway.pid!,
      hostPid: host.pid!,
      agentPid,
      probeHeap: (which) => probeHeap(which === "gateway" ? gateway : host, ++probes),
      rss: (which) => readRss(pidOf(which)),
      cpuMs: (which) => readCpuMs(pidOf(which)),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function spawnLogged(args: string[], env: NodeJS.ProcessEnv, logPath: string): ChildProcess {
  const log = openSync(logPath, "a");
  try {
    const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", log, log, "ipc"] });
    guardChild(child.pid!);
    child.once("exit", () => releaseChild(child.pid!));
    return child;
  } finally {
    closeSync(log);
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), stopBudgetMs);
  await exited(child).finally(() => clearTimeout(timer));
}

function failedStart(what: string, logPath: string): Error {
  let tail = "";
  try {
    tail = readFileSync(logPath, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    // No log yet.
  }
  return new Error(`${what}\n${tail}`);
}

async function untilReady(child: ChildProcess, url: string, logPath: string): Promise<void> {
  const deadline = Date.now() + startBudgetMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw failedStart(`switchboard serve exited (${child.exitCode}) before it was ready.`, logPath);
    const ready = await fetch(url).then((response) => response.ok, () => false);
    if (ready) return;
    await sleep(100);
  }
  throw failedStart(`switchboard serve was not ready within ${startBudgetMs} ms.`, logPath);
}

async function untilHostReady(child: ChildProcess, url: string, token: string, logPath: string): Promise<void> {
  const client = createClient(InternHostService, createGrpcTransport({ baseUrl: url }));
  const deadline = Date.now() + startBudgetMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw failedStart(`switchboard intern-host exited (${child.exitCode}) before it was ready.`, logPath);
    const status = await client.getHostStatus({}, { headers: { authorization: `Bearer ${token}` }, timeoutMs: 1_000 }).catch(() => undefined);
    if (status?.agentReady) return;
    await sleep(100);
  }
  throw failedStart(`switchboard intern-host's agent was not ready within ${startBudgetMs} ms.`, logPath);
}

function probeHeap(child: ChildProcess, id: number): Promise<HeapProbe> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error("The memory probe did not answer within 30 s.")), 30_000);
    const onMessage = (message: { type?: string; id?: number } & HeapProbe) => {
      if (message?.type === "memory-probe" && message.id === id) finish(undefined, message);
    };
    const finish = (error?: Error, probe?: HeapProbe) => {
      clearTimeout(timer);
      child.off("message", onMessage);
      if (error) reject(error);
      else resolve({ collected: probe!.collected, before: probe!.before, after: probe!.after });
    };
    child.on("message", onMessage);
    child.send({ type: "memory-probe", id });
  });
}
