import { InvalidArgumentError, type Command } from "commander";
import { startInternHost } from "../intern-host/intern-host.js";
import { hostDefaults } from "../intern-host/host-options.js";
import { referenceAgentCommand } from "../intern-host/reference-agent/reference-agent-command.js";
import { createLogger, parseLogLevel } from "../server/logger.js";
import { exitWithError } from "./exit-with-error.js";

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InvalidArgumentError("must be a non-negative integer");
  return number;
}

function positiveSeconds(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError("must be a positive number of seconds");
  return number;
}

function listenAddress(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value);
  if (!match || Number(match[2]) > 65535) throw new InvalidArgumentError("must be HOST:PORT, for example 0.0.0.0:7070");
  return { host: match[1].replace(/^\[|\]$/g, ""), port: Number(match[2]) };
}

/**
 * `switchboard intern-host`: the daemon beside a coding agent on an intern
 * machine. `--agent reference` runs the bundled reference agent.
 */
export function registerInternHostCommand(program: Command): void {
  program
    .command("intern-host")
    .description("serve InternHostService in front of one ACP agent")
    .requiredOption("--listen <host:port>", "address to listen on (HTTP/2 cleartext)", listenAddress)
    .requiredOption("--token <secret>", "host token the gateway must present")
    .requiredOption("--agent <command line>", 'the ACP agent command line, or "reference" for the bundled reference agent')
    .option("--cwd <dir>", "working directory of the agent")
    .option("--interaction-deadline <seconds>", "seconds a question waits before its run is cancelled", positiveSeconds, hostDefaults.interactionDeadlineSeconds)
    .option("--replay-bytes <n>", "bytes of undelivered output a run retains", positiveInteger, hostDefaults.replayBytes)
    .option("--max-paused-runs <n>", "runs held open across a question at once", positiveInteger, hostDefaults.maxPausedRuns)
    .option("--metrics-listen <host:port>", "serve Prometheus metrics on GET /metrics at this address (HTTP/1.1)", listenAddress)
    .action(async (options) => {
      let level: string;
      try {
        level = parseLogLevel(process.env.LOG_LEVEL);
      } catch (error) {
        exitWithError(error);
      }
      const logger = createLogger(level);
      const host = await startInternHost({
        host: options.listen.host,
        port: options.listen.port,
        token: options.token,
        agent: options.agent === "reference" ? referenceAgentCommand() : options.agent,
        cwd: options.cwd,
        interactionDeadlineSeconds: options.interactionDeadline,
        replayBytes: options.replayBytes,
        maxPausedRuns: options.maxPausedRuns,
        metricsListen: options.metricsListen,
        logger,
      }).catch((error: Error) => {
        logger.fatal({ err: error }, "could not start the intern host");
        process.exit(1);
      });
      logger.info({ url: host.url, metrics_url: host.metricsUrl }, "intern host serving");
      const stop = () => host.close().then(() => process.exit(0), () => process.exit(1));
      process.once("SIGTERM", stop);
      process.once("SIGINT", stop);
    });
}
