import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { createParser } from "eventsource-parser";
import { openApiDocumentUrl } from "../../src/bridge/openapi-route.js";

// ajv-formats is CommonJS: NodeNext sees its module object, whose `default` is the plugin (at run time too).
const addFormats = addFormatsModule.default;

/** The committed OpenAPI document, as the server serves it. */
export const openApiDocument = JSON.parse(readFileSync(openApiDocumentUrl, "utf8"));

/** What a checked response held, for the test's own assertions. */
export interface CheckedResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body. */
  body?: any;
  /** Each `data:` payload of an event stream but `[DONE]`, parsed. */
  chunks?: any[];
  /** The raw body of a binary response. */
  bytes?: Buffer;
}

/** A response that disagrees with the document; the message says where. */
export class ContractViolation extends Error {}

const documentId = "https://switchboard.local/openapi.json";

function pointer(...segments: string[]): string {
  return segments.map((segment) => segment.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");
}

/**
 * Checks real responses against the OpenAPI document, so the document stays
 * true: the status must be documented for the operation, the content type
 * documented for that status, every required header present and every
 * documented header valid, and the body valid against the documented schema
 * (for `text/event-stream`, each `data:` payload against `x-itemSchema`).
 */
export function createOpenApiContract(document: any = openApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, documentId);
  const compiled = new Map<string, ValidateFunction>();

  const validatorAt = (path: string): ValidateFunction => {
    let validate = compiled.get(path);
    if (!validate) {
      validate = ajv.compile({ $ref: `${documentId}#/${path}` });
      compiled.set(path, validate);
    }
    return validate;
  };

  const deref = (node: any): { node: any; path?: string } => {
    let path: string | undefined;
    while (node && typeof node.$ref === "string") {
      path = node.$ref.slice(2);
      node = path!.split("/").reduce((at: any, key: string) => at?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], document);
    }
    return { node, path };
  };

  function validate(path: string, value: unknown, what: string): void {
    const check = validatorAt(path);
    if (!check(value)) throw new ContractViolation(`${what} does not match #/${path}: ${ajv.errorsText(check.errors)}\n${JSON.stringify(value).slice(0, 500)}`);
  }

  function checkHeaders(headersDoc: Record<string, any> | undefined, headers: Headers, where: string): void {
    for (const [name, declared] of Object.entries(headersDoc ?? {})) {
      const { node } = deref(declared);
      const value = headers.get(name);
      if (value === null) {
        if (node.required) throw new ContractViolation(`${where}: required header ${name} is missing`);
        continue;
      }
      const type = deref(node.schema).node?.type;
      const parsed = type === "integer" || type === "number" ? Number(value) : value;
      const check = ajv.compile(node.schema);
      if (!check(parsed)) throw new ContractViolation(`${where}: header ${name}: ${value} does not match: ${ajv.errorsText(check.errors)}`);
    }
  }

  async function eventPayloads(response: Response, schemaPath: string, where: string): Promise<any[]> {
    const chunks: any[] = [];
    let done = false;
    const parser = createParser({
      onEvent(event) {
        if (done) throw new ContractViolation(`${where}: data after [DONE]`);
        if (event.data === "[DONE]") {
          done = true;
          return;
        }
        const chunk = JSON.parse(event.data);
        validate(schemaPath, chunk, `${where}: data payload ${chunks.length}`);
        chunks.push(chunk);
      },
    });
    const decoder = new TextDecoder();
    for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(piece, { stream: true }));
    if (!done) throw new ContractViolation(`${where}: the stream did not end with data: [DONE]`);
    return chunks;
  }

  return {
    /** Whether `value` matches the component schema `name`, for request bodies. */
    matches(name: string, value: unknown): boolean {
      return validatorAt(`components/schemas/${pointer(name)}`)(value);
    },

    /**
     * Reads `response` whole and checks it against the operation
     * `method path` (a path template of the document, such as `/videos/{id}`).
     * Throws a {@link ContractViolation} on any disagreement.
     */
    async check(method: string, path: string, response: Response): Promise<CheckedResponse> {
      const where = `${method.toUpperCase()} ${path} → ${response.status}`;
      const operation = document.paths?.[path]?.[method.toLowerCase()];
      if (!operation) throw new ContractViolation(`${method} ${path} is not a documented operation`);
      const declared = operation.responses?.[String(response.status)];
      if (!declared) throw new ContractViolation(`${where}: status ${response.status} is not documented`);
      const { node: documented, path: responsePath } = deref(declared);
      const base = responsePath ?? pointer("paths", path, method.toLowerCase(), "responses", String(response.status));
      checkHeaders(documented.headers, response.headers, where);
      const result: CheckedResponse = { status: response.status, headers: response.headers };
      const mediaType = response.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
      if (!documented.content) {
        if ((await response.arrayBuffer()).byteLength > 0) throw new ContractViolation(`${where}: a body where none is documented`);
        return result;
      }
      if (!mediaType || !documented.content[mediaType]) {
        throw new ContractViolation(`${where}: content type ${mediaType} is not documented (${Object.keys(documented.content).join(", ")})`);
      }
      const media = documented.content[mediaType];
      const mediaPath = `${base}/content/${pointer(mediaType)}`;
      if (media["x-itemSchema"]) {
        result.chunks = await eventPayloads(response, `${mediaPath}/x-itemSchema`, where);
      } else if (mediaType === "application/json") {
        result.body = await response.json();
        validate(`${mediaPath}/schema`, result.body, `${where}: body`);
      } else {
        result.bytes = Buffer.from(await response.arrayBuffer());
      }
      return result;
    },
  };
}

/** The checker over the committed document. */
export type OpenApiContract = ReturnType<typeof createOpenApiContract>;
