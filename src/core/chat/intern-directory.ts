import type { InternRecord } from "../../store/interns.js";
import type { Store } from "../../store/store.js";
import { createLookupCache, type LookupCacheOptions } from "../lookup-cache.js";

/** Where a chat turn finds its intern: the store, through a short-lived cache. */
export interface InternDirectory {
  /** The intern `id` of organization `orgId`, if any. */
  find(orgId: string, id: string): Promise<InternRecord | undefined>;
  /** Forgets intern `id` (in `orgId`, or in every organization), so an admin change holds on this replica at once. */
  forget(orgId: string | undefined, id: string): void;
  /** Forgets every intern, when change notices may have been missed. */
  forgetAll(): void;
}

/**
 * Every chat turn needs its intern's host and state; cached for `ttlMs`, a
 * burst of turns costs one query instead of one each. Admin changes reach it
 * through the store's change notices, whichever replica made them.
 */
export function createInternDirectory(store: Pick<Store, "interns">, options: LookupCacheOptions): InternDirectory {
  const cache = createLookupCache((key) => {
    const [orgId, id] = JSON.parse(key) as [string, string];
    return store.interns.find(orgId, id);
  }, options);
  return {
    find: (orgId, id) => cache.get(JSON.stringify([orgId, id])),
    forget(orgId, id) {
      cache.invalidate((_intern, key) => {
        const [cachedOrg, cachedId] = JSON.parse(key) as [string, string];
        return cachedId === id && (orgId === undefined || cachedOrg === orgId);
      });
    },
    forgetAll: () => cache.clear(),
  };
}
