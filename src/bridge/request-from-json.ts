import { fromJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { bridgeRefusal } from "./bridge-refusal.js";

/**
 * Maps a JSON body onto a request message (wire names, unknown members
 * ignored); a body that is not an object, or a member of the wrong shape, is
 * the bridge's 400.
 */
export function requestFromJson<T extends DescMessage>(schema: T, body: unknown, extra: JsonObject = {}): MessageShape<T> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw bridgeRefusal("The request body must be a JSON object.");
  try {
    return fromJson(schema, { ...(body as JsonObject), ...extra }, { ignoreUnknownFields: true });
  } catch (error) {
    throw bridgeRefusal(`Invalid request body: ${(error as Error).message}`);
  }
}
