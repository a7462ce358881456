import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxConcurrentStreams } from "../src/server/grpc-listener.js";
import { startTestServer, type TestServer } from "./support/test-server.js";

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t?.close());

/** Sends raw bytes and reads the whole answer, as a client whose request Node's parser refuses. */
function rawExchange(request: string): Promise<string> {
  const { hostname, port } = new URL(t.httpUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => (answer += chunk));
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

const envelopeOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));

describe("requests refused before any route runs still get the JSON envelope", () => {
  it("a URL with malformed percent-encoding", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/videos/%E0%A4%A`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { code: 400, message: "The URL is not valid: it holds a malformed percent-encoding.", metadata: { reason: "bad_request", retryable: false } },
    });
  });

  it("a path segment longer than any id", async () => {
    const response = await fetch(`${t.httpUrl}/api/v1/videos/${"a".repeat(1025)}`, { headers: { authorization: `Bearer ${t.tenant.api_key}` } });
    expect([response.status, (await response.json()).error.message]).toEqual([400, "A path segment is longer than 1024 characters."]);
  });

  it("a request Node's HTTP parser rejects", async () => {
    const answer = await rawExchange("GET /api/v1/organization/members HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
    expect(envelopeOf(answer)).toEqual({ error: { code: 400, message: "The request is not valid HTTP/1.1.", metadata: { reason: "bad_request", retryable: false } } });
  });

  it("headers larger than Node accepts", async () => {
    const answer = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(envelopeOf(answer)).toEqual({ error: { code: 431, message: "The request headers are too large.", metadata: { reason: "headers_too_large", retryable: false } } });
  });
});

describe("bounds on what a client may make the server hold", () => {
  /** Announces a body of `length` bytes, sends 1 KiB of it, and returns the status the server answers with meanwhile. */
  function statusBeforeTheBody(path: string, length: number, key?: string): Promise<number> {
    const { hostname, port } = new URL(t.httpUrl);
    const authorization = key ? `Authorization: Bearer ${key}\r\n` : "";
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: hostname, port: Number(port) }, () => {
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${authorization}\r\n{"input":"${"a".repeat(1024)}`);
      });
      socket.setEncoding("utf8");
      socket.once("data", (chunk: string) => {
        resolve(Number(chunk.split(" ")[1]));
        socket.destroy();
      });
      socket.on("error", reject);
      // Generous: without the check the server waits for the rest of the body, minutes away.
      setTimeout(() => (socket.destroy(), resolve(0)), 10_000).unref();
    });
  }

  it("refuses a stranger's large speech or video body before reading it", async () => {
    for (const path of ["/api/v1/audio/speech", "/api/v1/videos"]) {
      expect(await statusBeforeTheBody(path, 15 * 1024 * 1024)).toBe(401);
      expect(await statusBeforeTheBody(path, 15 * 1024 * 1024, "sb-v1-not-a-key")).toBe(401);
    }
  });

  it("caps the streams one HTTP/2 connection may open on the gRPC listener", async () => {
    const session = http2.connect(t.grpcUrl);
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
      expect(settings.maxConcurrentStreams).toBe(maxConcurrentStreams);
    } finally {
      session.close();
    }
  });
});
