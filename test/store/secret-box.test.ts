import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretBox, sealedPrefix } from "../../src/store/secret-box.js";

const secret = "host-token-3f9a1c";
const context = "interns.host_token:org_a:scripted";

function refusalOf(open: () => unknown): string | undefined {
  try {
    open();
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

describe("the secret box", () => {
  const box = createSecretBox(randomBytes(32));

  it("seals to a prefixed value that holds no trace of the secret and opens back to it", () => {
    const sealed = box.seal(secret, context);
    expect(sealed.startsWith(sealedPrefix)).toBe(true);
    expect(sealed).not.toContain(secret);
    expect(box.open(sealed, context)).toBe(secret);
    // A fresh IV each time: the same secret never seals twice alike.
    expect(box.seal(secret, context)).not.toBe(sealed);
    expect(box.open(box.seal("", context), context)).toBe("");
  });

  it("refuses a sealed value that was altered, without naming the secret", () => {
    const sealed = box.seal(secret, context);
    const bytes = Buffer.from(sealed.slice(sealedPrefix.length), "base64url");
    for (const at of [0, 12, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[at] ^= 1;
      expect(() => box.open(sealedPrefix + altered.toString("base64url"), context)).toThrow(/does not open/);
    }
    expect(() => box.open(sealedPrefix + bytes.subarray(0, 20).toString("base64url"), context)).toThrow(/truncated/);
    const refusal = refusalOf(() => box.open(sealedPrefix + bytes.subarray(1).toString("base64url"), context));
    expect(refusal).toMatch(/does not open/);
    expect(refusal).not.toContain(secret);
  });

  it("refuses a value sealed with another key", () => {
    expect(() => createSecretBox(randomBytes(32)).open(box.seal(secret, context), context)).toThrow(`The sealed value of ${context} does not open`);
  });

  it("refuses a value sealed for another place (a sealed token copied into another row)", () => {
    expect(() => box.open(box.seal(secret, context), "interns.host_token:org_a:other")).toThrow(/does not open/);
    expect(() => box.open(box.seal(secret, context), "organizations.webhook_signing_secret:org_a")).toThrow(/does not open/);
  });

  it("passes a value written in clear before sealing through unchanged", () => {
    expect(box.open(secret, context)).toBe(secret);
  });

  it("without a key, stores in clear and refuses to read a sealed value", () => {
    const clear = createSecretBox(undefined);
    expect(clear.sealing).toBe(false);
    expect(clear.seal(secret, context)).toBe(secret);
    expect(clear.open(secret, context)).toBe(secret);
    expect(() => clear.open(box.seal(secret, context), context)).toThrow(/is sealed, but SECRETS_KEY is not set/);
  });

  it("takes only 32-byte keys", () => {
    expect(() => createSecretBox(randomBytes(16))).toThrow("A secrets key must be 32 bytes, got 16.");
  });
});
