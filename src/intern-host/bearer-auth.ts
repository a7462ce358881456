import { createHash, timingSafeEqual } from "node:crypto";
import { catalogueError } from "../core/error-catalogue.js";

/** Checks the `authorization` header of one call; throws the catalogue's `unauthenticated`. */
export type BearerCheck = (headers: Headers) => void;

/**
 * Creates the host-token check every InternHostService call goes through.
 * Both sides are hashed to SHA-256 first so `timingSafeEqual` compares equal
 * lengths and the comparison time reveals neither the token nor its length.
 */
export function createBearerAuth(token: string): BearerCheck {
  if (token.length === 0) throw new Error("The intern host token must not be empty.");
  const expected = digest(token);
  return (headers) => {
    const match = /^Bearer\s+(.+)$/i.exec(headers.get("authorization") ?? "");
    if (!match || !timingSafeEqual(digest(match[1].trim()), expected)) throw catalogueError("unauthenticated");
  };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
