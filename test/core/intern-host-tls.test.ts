import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { InternHostService } from "../../src/gen/switchboard/host/v1/host_pb.js";

const certFile = fileURLToPath(new URL("../support/tls/host-cert.pem", import.meta.url));
const keyFile = fileURLToPath(new URL("../support/tls/host-key.pem", import.meta.url));
const child = fileURLToPath(new URL("../support/host-call-child.ts", import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** StartRun through the gateway's host client in a child process whose environment (and so trust store) is `env`. */
async function callFromChild(endpoint: string, env: Record<string, string>): Promise<{ kinds?: string[]; error?: { code: number; message: string } }> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", tsx, child, endpoint], { env: { ...process.env, ...env }, timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

describe("intern host clients over TLS", () => {
  let server: Http2SecureServer;
  let port: number;
  beforeAll(async () => {
    server = createSecureServer(
      { cert: readFileSync(certFile), key: readFileSync(keyFile) },
      connectNodeAdapter({
        routes: (router) =>
          router.service(InternHostService, {
            async *startRun(request, context) {
              if (context.requestHeader.get("authorization") !== "Bearer t0ken" || request.prompt !== "over TLS") throw new Error("unexpected call");
              yield { event: { seq: 1n, kind: { case: "started", value: { sessionId: "s" } } } };
              yield { event: { seq: 2n, kind: { case: "content", value: "hello" } } };
            },
          }),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => server?.close());

  it("reach an https endpoint whose certificate the process trusts (a private CA through NODE_EXTRA_CA_CERTS)", { timeout: 60_000 }, async () => {
    expect(await callFromChild(`https://localhost:${port}`, { NODE_EXTRA_CA_CERTS: certFile })).toEqual({ kinds: ["started", "content"] });
  });

  it("refuse an https endpoint whose certificate nothing trusts, as unavailable", { timeout: 60_000 }, async () => {
    const { error } = await callFromChild(`https://localhost:${port}`, {});
    expect(error?.code).toBe(Code.Unavailable);
  });
});
