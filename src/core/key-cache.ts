import type { KeyRecord } from "../store/api-keys.js";
import { createLookupCache, type LookupCache, type LookupCacheOptions } from "./lookup-cache.js";

/** Key lookups by hash (base64 of the SHA-256), cached briefly: see {@link createLookupCache}. */
export type KeyCache = LookupCache<KeyRecord>;

/**
 * A short-lived cache of key lookups by hash, so an authenticated request does
 * not cost a database round trip. Entries are keyed by the hash in base64.
 */
export function createKeyCache(lookup: (hash: Buffer) => Promise<KeyRecord | undefined>, options: LookupCacheOptions): KeyCache {
  return createLookupCache((hash) => lookup(Buffer.from(hash, "base64")), options);
}
