import type { ChangeNotice } from "../store/change-notices.js";
import type { InternDirectory } from "./chat/intern-directory.js";
import type { KeyCache } from "./key-cache.js";
import type { MemberDirectory } from "./member-directory.js";

/** The caches of store lookups that change notices keep current. */
export interface InvalidatedCaches {
  keys: KeyCache;
  interns: InternDirectory;
  members: MemberDirectory;
}

/**
 * Subscribes the lookup caches to the store's change notices, so a change made
 * through any replica (a key revoked, a member come or gone, programme or intern
 * changes) drops what this replica cached about it.
 */
export function invalidateOnChange(subscribe: (listener: (notice: ChangeNotice) => void) => void, { keys, interns, members }: InvalidatedCaches): void {
  subscribe((notice) => {
    switch (notice.kind) {
      case "key":
        return keys.invalidate((key) => key?.keyId === notice.keyId);
      case "member":
        // A notice from a replica that predates listing pages names no organization.
        members.forget(notice.orgId);
        return keys.invalidate((key) => key?.memberId === notice.memberId);
      case "organization":
        return keys.invalidate((key) => key?.orgId === notice.orgId);
      case "intern":
        // A turn that looked for it a moment ago may have cached its absence.
        return interns.forget(notice.orgId, notice.id);
      case "everything":
        keys.clear();
        interns.forgetAll();
        members.forgetAll();
    }
  });
}
