import { create } from "@bufbuild/protobuf";
import { ListMembersResponseSchema, type ListMembersResponse } from "../gen/switchboard/v1/organization_pb.js";
import type { Store } from "../store/store.js";
import { createLookupCache, type LookupCacheOptions } from "./lookup-cache.js";

/** Where member listing finds its pages: the store, through a short-lived cache. */
export interface MemberDirectory {
  /** One page of `orgId`'s current members, oldest first. The message is shared between callers: read it, never change it. */
  page(orgId: string, offset: number, limit: number): Promise<ListMembersResponse>;
  /** Forgets the pages of `orgId` (of every organization when undefined), so a membership change holds on this replica at once. */
  forget(orgId: string | undefined): void;
  /** Forgets every page, when change notices may have been missed. */
  forgetAll(): void;
}

const pageKey = (orgId: string, offset: number, limit: number) => `${orgId}\n${offset}\n${limit}`;

/**
 * Member pages, cached for `ttlMs` as ready response messages: a listing that
 * hits the cache costs no query and no message building. Memberships change
 * only through AdminService, which publishes a change notice, so every
 * replica drops an organization's pages as soon as one of its members comes
 * or goes; the TTL bounds staleness while notices are interrupted.
 */
export function createMemberDirectory(store: Pick<Store, "members">, options: LookupCacheOptions): MemberDirectory {
  const cache = createLookupCache(async (key) => {
    const [orgId, offset, limit] = key.split("\n");
    const page = await store.members.list(orgId, Number(offset), Number(limit));
    return create(ListMembersResponseSchema, {
      data: page.members.map((member) => ({
        id: member.id,
        email: member.email,
        firstName: member.first_name ?? undefined,
        lastName: member.last_name ?? undefined,
        role: member.role,
      })),
      totalCount: BigInt(page.total),
    });
  }, options);
  return {
    page: async (orgId, offset, limit) => (await cache.get(pageKey(orgId, offset, limit)))!,
    forget(orgId) {
      if (orgId === undefined) return cache.clear();
      const prefix = `${orgId}\n`;
      cache.invalidate((_page, key) => key.startsWith(prefix));
    },
    forgetAll: () => cache.clear(),
  };
}
