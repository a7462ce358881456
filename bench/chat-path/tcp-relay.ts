import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import net from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { guardChild, releaseChild } from "./orphan-guard.js";

const thisFile = fileURLToPath(import.meta.url);

/** A relay process between a client and one upstream address. */
export interface TcpRelay {
  /** Where clients connect: `http://127.0.0.1:PORT`, so an HTTP/2 client can use it as a base URL. */
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts, in a process of its own, a relay that copies every byte between a
 * client connection and a fresh connection to `target`, parsing nothing.
 * Placed in the gateway's spot, it shows what one more process hop costs on
 * this machine under the same load: the least any gateway could add.
 */
export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const child = spawn(process.execPath, ["--import", tsxLoader, thisFile, "--relay-to", target], { stdio: ["ignore", "pipe", "inherit"] });
  guardChild(child.pid!);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => releaseChild(child.pid!));
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    void exited.then(() => reject(new Error("The TCP relay exited before it listened.")));
  });
  lines.close();
  return {
    url: (JSON.parse(first) as { url: string }).url,
    pid: child.pid!,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The relay process itself: listens on a free loopback port, prints its URL, stops on SIGTERM. */
async function relayTo(target: string): Promise<void> {
  const { hostname, port } = new URL(target);
  const server = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ host: hostname, port: Number(port), noDelay: true });
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` })}\n`);
  process.once("SIGTERM", () => process.exit(0));
}

if (process.argv[1] === thisFile) {
  const at = process.argv.indexOf("--relay-to");
  if (at < 0) throw new Error("usage: tcp-relay.ts --relay-to http://HOST:PORT");
  await relayTo(process.argv[at + 1]);
}
