import { connect, createServer, type AddressInfo, type Socket } from "node:net";

/** A TCP relay in front of PostgreSQL, for faults a real connection meets. */
export interface PostgresRelay {
  /** The database URL through the relay. */
  url: string;
  /** Closes every connection and refuses new ones (a restart, a failover) until {@link restore}. */
  cut(): void;
  restore(): void;
  /** Stops bytes flowing both ways on the open connections without closing them (a half-open connection); new ones flow. */
  freeze(): void;
  close(): Promise<void>;
}

/** Starts a relay on a loopback port to the database at `databaseUrl`. */
export async function startPostgresRelay(databaseUrl: string): Promise<PostgresRelay> {
  const target = new URL(databaseUrl);
  let down = false;
  const open = new Set<Socket>();
  const frozen = new WeakSet<Socket>();
  const relay = createServer((client) => {
    if (down) return void client.destroy();
    const server = connect(Number(target.port || 5432), target.hostname);
    for (const [from, to] of [[client, server], [server, client]] as const) {
      open.add(from);
      from.on("data", (bytes) => void (frozen.has(from) || to.write(bytes)));
      from.on("error", () => to.destroy()).on("close", () => (to.destroy(), open.delete(from)));
    }
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((relay.address() as AddressInfo).port);
  return {
    url: url.toString(),
    cut() {
      down = true;
      for (const socket of open) socket.destroy();
    },
    restore: () => void (down = false),
    freeze: () => open.forEach((socket) => frozen.add(socket)),
    close: () => (open.forEach((socket) => socket.destroy()), new Promise<void>((resolve) => relay.close(() => resolve()))),
  };
}
