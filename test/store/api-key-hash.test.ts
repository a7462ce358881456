import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { hashKey, hashKeyBase64, keyPrefix } from "../../src/store/api-keys.js";

describe("api key hashing", () => {
  const secret = `${keyPrefix}${"k".repeat(43)}`;

  it("stores the SHA-256 of the secret", () => {
    expect(hashKey(secret)).toEqual(createHash("sha256").update(secret).digest());
  });

  it("looks keys up by the same hash in base64, whichever way it is computed", () => {
    expect(hashKeyBase64(secret)).toBe(createHash("sha256").update(secret).digest("base64"));
    expect(hashKeyBase64("sb-v1-é☃")).toBe(hashKey("sb-v1-é☃").toString("base64"));
  });
});
