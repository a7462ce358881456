import net from "node:net";
import { fileURLToPath } from "node:url";
import { spawnBenchChild, type BenchChild } from "../bench-child.js";

const thisFile = fileURLToPath(import.meta.url);

/**
 * Starts, in a process of its own, a relay that copies every byte between a
 * client connection and a fresh connection to `target`, parsing nothing; its
 * URL is `http://127.0.0.1:PORT`, so an HTTP/2 client can use it as a base.
 * Placed in the gateway's spot, it shows what one more process hop costs on
 * this machine under the same load: the least any gateway could add.
 */
export function startTcpRelay(target: string): Promise<BenchChild> {
  return spawnBenchChild(thisFile, ["--relay-to", target], "The TCP relay");
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
