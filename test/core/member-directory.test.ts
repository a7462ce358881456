import { describe, expect, it } from "vitest";
import { isMessage } from "@bufbuild/protobuf";
import { ListMembersResponseSchema } from "../../src/gen/switchboard/v1/organization_pb.js";
import { createMemberDirectory } from "../../src/core/member-directory.js";
import type { Members } from "../../src/store/members.js";

/** A members table stand-in that counts the pages read from it. */
function countingMembers() {
  const reads: string[] = [];
  const members = {
    async list(orgId: string, offset: number, limit: number) {
      reads.push(`${orgId} ${offset} ${limit}`);
      return { members: [{ id: `mem_${orgId}`, email: `a@${orgId}.example`, first_name: null, last_name: "L", role: "org:admin" }], total: 1 };
    },
  } as unknown as Members;
  return { reads, members };
}

describe("member directory", () => {
  it("serves a page again from the cache as the same ready message, and reads each page once", async () => {
    const { reads, members } = countingMembers();
    const directory = createMemberDirectory({ members }, { ttlMs: 60_000, maxEntries: 10 });
    const page = await directory.page("org_a", 0, 50);
    expect(isMessage(page, ListMembersResponseSchema)).toBe(true);
    expect(page.data[0]).toMatchObject({ id: "mem_org_a", lastName: "L", role: "org:admin" });
    expect(page.data[0].firstName).toBeUndefined();
    expect(page.totalCount).toBe(1n);
    expect(await directory.page("org_a", 0, 50)).toBe(page);
    await directory.page("org_a", 50, 50);
    expect(reads).toEqual(["org_a 0 50", "org_a 50 50"]);
  });

  it("forgets only the pages of the organization a change names, and every page for a change that names none", async () => {
    const { reads, members } = countingMembers();
    const directory = createMemberDirectory({ members }, { ttlMs: 60_000, maxEntries: 10 });
    const readAll = () => Promise.all([directory.page("org_a", 0, 50), directory.page("org_a", 0, 10), directory.page("org_ab", 0, 50)]);
    await readAll();
    directory.forget("org_a");
    await readAll();
    expect(reads.slice(3)).toEqual(["org_a 0 50", "org_a 0 10"]);
    directory.forget(undefined);
    await readAll();
    expect(reads.slice(5)).toEqual(["org_a 0 50", "org_a 0 10", "org_ab 0 50"]);
    directory.forgetAll();
    await readAll();
    expect(reads).toHaveLength(11);
  });
});
