import type { Command } from "commander";
import { loadServerConfig, type ServerConfig } from "../server/config.js";
import { exitWithError } from "./exit-with-error.js";
import { createLogger } from "../server/logger.js";
import { startServer } from "../server/server.js";
import { bootstrapPath } from "../server/bootstrap.js";

/** `switchboard serve [--bootstrap]`: runs the API server until SIGTERM/SIGINT. */
export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("run the API server (HTTP/1.1 on PORT, HTTP/2 gRPC on GRPC_PORT)")
    .option("--bootstrap", "create a development tenant even on PostgreSQL when the store is empty")
    .action(async (flags: { bootstrap?: boolean }) => {
      let config: ServerConfig;
      try {
        config = loadServerConfig(process.env, flags);
      } catch (error) {
        exitWithError(error);
      }
      const logger = createLogger(config.logLevel);
      const server = await startServer(config, logger).catch((error: Error) => {
        logger.fatal({ err: error }, "could not start");
        process.exit(1);
      });
      if (server.bootstrap) {
        // Printed once, on the start that created it; kept in DATA_DIR (0600).
        process.stdout.write(
          `\nDevelopment tenant created (also in ${bootstrapPath(config.dataDir)}):\n${JSON.stringify(server.bootstrap, null, 2)}\n\n`,
        );
      }
      logger.info({ http: server.httpUrl, grpc: server.grpcUrl, store: server.store.db.kind }, "switchboard serving");
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, "shutting down");
        server.close().then(
          () => process.exit(0),
          (error) => {
            logger.error({ err: error }, "shutdown failed");
            process.exit(1);
          },
        );
      };
      process.on("SIGTERM", () => stop("SIGTERM"));
      process.on("SIGINT", () => stop("SIGINT"));
    });
}
