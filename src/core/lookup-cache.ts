/** Options for {@link createLookupCache}. */
export interface LookupCacheOptions {
  /** How long a lookup is trusted; bounds how late another replica sees a change. */
  ttlMs: number;
  /** Entries kept at most; the oldest go first. */
  maxEntries: number;
}

/** A short-lived cache of store lookups by string key. */
export interface LookupCache<V> {
  /** The cached value, else the lookup's; concurrent misses on one key share one lookup. */
  get(key: string): Promise<V | undefined>;
  /** Forgets the entries that match, misses included (`value` undefined), so a change holds on this replica at once. */
  invalidate(match: (value: V | undefined, key: string) => boolean): void;
  clear(): void;
}

/**
 * Caches lookups that every request would otherwise send to the store (keys,
 * interns). Misses are cached too, briefly, so a flood of unknown names does
 * not reach the store; a failed lookup is not cached. Concurrent misses on one
 * key share one lookup, so a burst of requests costs one query, not hundreds.
 */
export function createLookupCache<V>(lookup: (key: string) => Promise<V | undefined>, options: LookupCacheOptions): LookupCache<V> {
  const entries = new Map<string, { value: Promise<V | undefined>; settled?: { value: V | undefined }; expires: number }>();
  return {
    get(key) {
      const now = Date.now();
      const hit = entries.get(key);
      if (hit && hit.expires > now) return hit.value;
      const entry: { value: Promise<V | undefined>; settled?: { value: V | undefined }; expires: number } = {
        value: lookup(key),
        expires: now + options.ttlMs,
      };
      entries.delete(key);
      entries.set(key, entry);
      if (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
      entry.value.then(
        (value) => (entry.settled = { value }),
        () => entries.get(key) === entry && entries.delete(key),
      );
      return entry.value;
    },
    invalidate(match) {
      // A lookup still in flight may have read the old row: forget it too.
      for (const [key, entry] of entries) if (!entry.settled || match(entry.settled.value, key)) entries.delete(key);
    },
    clear() {
      entries.clear();
    },
  };
}
