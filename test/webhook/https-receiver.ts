import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/** A self-signed certificate for the test receiver; it is also the CA the sender trusts. */
export interface TestCertificate {
  cert: string;
  key: string;
}

/** Names and addresses the certificate covers. */
const subjectAltName = "DNS:localhost,DNS:hooks.test,IP:127.0.0.1,IP:::1";

/** Generates a throwaway P-256 certificate with openssl (present on Debian images), in a temp dir removed afterwards. */
export async function createTestCertificate(): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), "switchboard-webhook-cert-"));
  try {
    await promisify(execFile)("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1",
      "-subj", "/CN=localhost", "-addext", `subjectAltName=${subjectAltName}`,
    ]);
    return { cert: await readFile(join(dir, "cert.pem"), "utf8"), key: await readFile(join(dir, "key.pem"), "utf8") };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A request the receiver got. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
}

/** A local HTTPS webhook receiver that answers with scripted statuses. */
export interface HttpsReceiver {
  port: number;
  requests: ReceivedRequest[];
  /** Statuses for the next requests, in order; once used up it answers 200. */
  script(...statuses: Array<number | { status: number; headers?: Record<string, string> }>): void;
  close(): Promise<void>;
}

/** Starts the receiver on 127.0.0.1 with an ephemeral port. */
export async function startHttpsReceiver(certificate: TestCertificate): Promise<HttpsReceiver> {
  const requests: ReceivedRequest[] = [];
  const scripted: Array<{ status: number; headers?: Record<string, string> }> = [];
  const server: Server = createServer({ cert: certificate.cert, key: certificate.key }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      requests.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, rawBody: Buffer.concat(chunks).toString() });
      const next = scripted.shift() ?? { status: 200 };
      response.writeHead(next.status, { "content-type": "text/plain", ...next.headers });
      response.end(next.status < 300 ? "ok" : "nope");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    script: (...statuses) => scripted.push(...statuses.map((entry) => (typeof entry === "number" ? { status: entry } : entry))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
