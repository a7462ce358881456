import { ConnectError } from "@connectrpc/connect";
import { createInternHostClients } from "../../src/core/chat/intern-host-clients.js";

// Calls StartRun on the endpoint given, with the gateway's host client, in a
// process of its own so a test can choose its trust store
// (NODE_EXTRA_CA_CERTS is read once, at start). Prints the events' kinds, or
// the error, as one JSON line.
const [endpoint] = process.argv.slice(2);
const clients = createInternHostClients();
try {
  const kinds: (string | undefined)[] = [];
  for await (const { event } of clients.get(endpoint).startRun({ prompt: "over TLS" }, { signal: new AbortController().signal, headers: { authorization: "Bearer t0ken" } })) {
    kinds.push(event?.kind.case);
  }
  process.stdout.write(`${JSON.stringify({ kinds })}\n`);
} catch (error) {
  const connectError = ConnectError.from(error);
  process.stdout.write(`${JSON.stringify({ error: { code: connectError.code, message: connectError.rawMessage } })}\n`);
} finally {
  clients.close();
}
