import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** A JSON answer of the bridge. */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** POST /api/v1/videos with a JSON body (or raw text, to test malformed bodies). */
export async function postVideo(httpUrl: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<JsonAnswer> {
  const response = await fetch(`${httpUrl}/api/v1/videos`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** GET a job by its polling URL (a path). */
export async function getVideo(httpUrl: string, key: string, pollingUrl: string): Promise<JsonAnswer> {
  const response = await fetch(`${httpUrl}${pollingUrl}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const terminal = new Set(["completed", "failed", "cancelled", "expired"]);

/** Polls a job until it reaches a terminal status (or `until` says so); returns every status seen, in order. */
export async function waitForVideo(
  httpUrl: string,
  key: string,
  pollingUrl: string,
  options: { timeoutMs?: number; until?: (job: any) => boolean } = {},
): Promise<{ job: any; seen: string[] }> {
  const until = options.until ?? ((job) => terminal.has(job.status));
  const deadline = Date.now() + (options.timeoutMs ?? 40_000);
  const seen: string[] = [];
  for (;;) {
    const { status, body } = await getVideo(httpUrl, key, pollingUrl);
    if (status !== 200) throw new Error(`polling ${pollingUrl} answered ${status}: ${JSON.stringify(body)}`);
    if (seen.at(-1) !== body.status) seen.push(body.status);
    if (until(body)) return { job: body, seen };
    if (Date.now() > deadline) throw new Error(`${pollingUrl} still ${body.status} after ${options.timeoutMs ?? 40_000} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Writes an operator models file with these `video` entries; returns its path. */
export function writeVideoModelsFile(dir: string, video: unknown[]): string {
  const path = join(dir, "models.json");
  writeFileSync(path, JSON.stringify({ video }));
  return path;
}
