import { fromJson, ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { bridgeRefusal } from "./bridge-refusal.js";

const isObject = (json: unknown): json is JsonObject => typeof json === "object" && json !== null && !Array.isArray(json);

// google.protobuf.Struct, Value…: free-form objects (provider passthrough, tracing metadata) whose insides are user data.
const isWellKnown = (message: DescMessage) => message.typeName.startsWith("google.protobuf.");

// Every scalar but these is numeric; protobuf JSON would also take it as a string ("0x2", " 2", "NaN").
const nonNumeric = new Set([ScalarType.STRING, ScalarType.BOOL, ScalarType.BYTES]);

/** One value of `field` (a list or map entry for those kinds), in the public dialect. */
function publicValue(field: DescField, json: JsonValue, path: string): JsonValue {
  if (json === null) return json;
  if (field.message && !isWellKnown(field.message)) return isObject(json) ? publicMessage(field.message, json, path) : json;
  if (field.scalar !== undefined && !nonNumeric.has(field.scalar) && typeof json !== "number") throw bridgeRefusal(`${path} must be a number.`);
  return json;
}

/**
 * Keeps the members named by a field's proto name, the API's wire name; the
 * lowerCamel aliases protobuf JSON also takes are unknown members, ignored.
 * Wrong shapes are left for fromJson to refuse.
 */
function publicMessage(schema: DescMessage, json: JsonObject, path: string): JsonObject {
  const kept: JsonObject = {};
  for (const field of schema.fields) {
    const value = json[field.name];
    if (value === undefined) continue;
    const at = path ? `${path}.${field.name}` : field.name;
    if (field.fieldKind === "list") kept[field.name] = Array.isArray(value) ? value.map((item, i) => publicValue(field, item, `${at}[${i}]`)) : value;
    // A map's keys are user data, not field names.
    else if (field.fieldKind === "map") kept[field.name] = isObject(value) ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, publicValue(field, item, `${at}.${key}`)])) : value;
    else kept[field.name] = publicValue(field, value, at);
  }
  return kept;
}

/**
 * Maps a JSON body onto a request message in the spec's JSON dialect, which
 * is narrower than protobuf JSON's: members are named by the proto field name
 * only (a lowerCamel alias is an unknown member, ignored, as the spec says of
 * members it does not name), and numbers are JSON numbers only (not "2" or
 * "0x2"). `extra` (path parameters) wins over the body. A body that is not an
 * object, or a member of the wrong shape, is the bridge's 400.
 */
export function requestFromJson<T extends DescMessage>(schema: T, body: unknown, extra: JsonObject = {}): MessageShape<T> {
  if (!isObject(body)) throw bridgeRefusal("The request body must be a JSON object.");
  const json = { ...publicMessage(schema, body, ""), ...extra };
  try {
    return fromJson(schema, json);
  } catch (error) {
    throw bridgeRefusal(`Invalid request body: ${(error as Error).message}`);
  }
}
