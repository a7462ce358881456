import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as OTLP/HTTP JSON carries it (ids are hex, attribute values typed). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** A local OTLP collector stand-in: accepts POST /v1/traces in OTLP/HTTP JSON, as the exporter sends it. */
export interface OtlpCollector {
  endpoint: string;
  spans: OtlpSpan[];
  /** Each exported resource's attributes, as JSON text. */
  resources: string[];
  close(): Promise<void>;
}

/** Starts the collector stand-in on a port chosen by the OS. */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: OtlpSpan[] = [];
  const resources: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || req.headers["content-type"] !== "application/json") {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      for (const resource of body.resourceSpans ?? []) {
        resources.push(JSON.stringify(resource.resource?.attributes ?? []));
        for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    resources,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A span attribute's value, whatever its OTLP type. */
export function attributeOf(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((attribute) => attribute.key === key)?.value;
  return value && Object.values(value)[0];
}
