import type { KeyRecord } from "../store/api-keys.js";

/** Options for {@link createKeyCache}. */
export interface KeyCacheOptions {
  /** How long a lookup is trusted; bounds how late another replica sees a revoke. */
  ttlMs: number;
  /** Entries kept at most; the oldest go first. */
  maxEntries: number;
}

/**
 * A short-lived cache of key lookups by hash, so an authenticated request does
 * not cost a database round trip. Misses are cached too (briefly) so a flood
 * of bad keys does not reach the store.
 */
export function createKeyCache(lookup: (hash: Buffer) => Promise<KeyRecord | undefined>, options: KeyCacheOptions) {
  const entries = new Map<string, { record: KeyRecord | undefined; expires: number }>();
  return {
    async get(hash: Buffer): Promise<KeyRecord | undefined> {
      const id = hash.toString("base64");
      const now = Date.now();
      const hit = entries.get(id);
      if (hit && hit.expires > now) return hit.record;
      const record = await lookup(hash);
      entries.delete(id);
      entries.set(id, { record, expires: now + options.ttlMs });
      if (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
      return record;
    },
    /** Forgets every entry of a key (after a revoke) or of an organization. */
    invalidate(match: (record: KeyRecord) => boolean): void {
      for (const [id, entry] of entries) if (entry.record && match(entry.record)) entries.delete(id);
    },
    clear(): void {
      entries.clear();
    },
  };
}

/** A key cache. */
export type KeyCache = ReturnType<typeof createKeyCache>;
