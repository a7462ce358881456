import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** Marks a stored value as sealed (and by which format), so rows written in clear before sealing still read. */
export const sealedPrefix = "sbx1:";

const keyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;

/**
 * Seals the credentials the gateway must send on (intern host tokens,
 * webhook signing secrets), so a database dump or a read-only injection does
 * not leak them. Each value is bound to where it lives (`context`, the
 * additional authenticated data): a sealed value copied into another row
 * does not open.
 */
export interface SecretBox {
  /** False when no key is configured: values are written in clear (PostgreSQL without SECRETS_KEY). */
  readonly sealing: boolean;
  /** The stored form of `plaintext` at `context`. */
  seal(plaintext: string, context: string): string;
  /** The plaintext of a stored value; a value without {@link sealedPrefix} (written in clear) as it is. Throws when it does not open. */
  open(stored: string, context: string): string;
}

/**
 * A box sealing with AES-256-GCM under `key` (32 bytes): `sbx1:` +
 * base64url(12-byte random IV | 16-byte tag | ciphertext). Without a key,
 * values are stored in clear and a sealed one cannot be read.
 */
export function createSecretBox(key: Uint8Array | undefined): SecretBox {
  if (key === undefined) return clearBox;
  if (key.length !== keyBytes) throw new Error(`A secrets key must be ${keyBytes} bytes, got ${key.length}.`);
  const sealingKey = Buffer.from(key);
  return {
    sealing: true,
    seal(plaintext, context) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv("aes-256-gcm", sealingKey, iv);
      cipher.setAAD(Buffer.from(context, "utf8"));
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return sealedPrefix + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString("base64url");
    },
    open(stored, context) {
      if (!stored.startsWith(sealedPrefix)) return stored;
      const sealed = Buffer.from(stored.slice(sealedPrefix.length), "base64url");
      if (sealed.length < ivBytes + tagBytes) throw new Error(`The sealed value of ${context} is truncated.`);
      const decipher = createDecipheriv("aes-256-gcm", sealingKey, sealed.subarray(0, ivBytes), { authTagLength: tagBytes });
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(sealed.subarray(ivBytes, ivBytes + tagBytes));
      try {
        return Buffer.concat([decipher.update(sealed.subarray(ivBytes + tagBytes)), decipher.final()]).toString("utf8");
      } catch {
        // Node's own message ("Unsupported state or unable to authenticate data") does not say which value or why.
        throw new Error(`The sealed value of ${context} does not open: another SECRETS_KEY sealed it, it was altered, or it was copied from another row.`);
      }
    },
  };
}

const clearBox: SecretBox = {
  sealing: false,
  seal: (plaintext) => plaintext,
  open(stored, context) {
    if (stored.startsWith(sealedPrefix)) throw new Error(`The value of ${context} is sealed, but SECRETS_KEY is not set.`);
    return stored;
  },
};
