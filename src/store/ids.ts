import { randomBytes } from "node:crypto";

/** Creates a random, URL-safe, prefixed id such as `org_3kT…`. */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString("base64url")}`;
}
