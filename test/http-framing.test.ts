import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
