import { createHash, timingSafeEqual } from "node:crypto";

/** Reads the token of an `Authorization: Bearer <token>` header value. */
export function bearerToken(authorization: string | null): string | undefined {
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match?.[1];
}

/**
 * Compares two secrets in constant time. Both are hashed first so neither
 * their contents nor their lengths leak through timing.
 */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
