import type { Queryable } from "./database.js";
import { newId } from "./ids.js";

/** A current member, as listed. */
export type MemberRecord = {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  role: string;
};

/** Members of organizations; a member who left is kept, marked `left_at`. */
export function createMembers(db: Queryable) {
  return {
    async add(member: { orgId: string; email: string; firstName?: string; lastName?: string; role: string }): Promise<string> {
      const id = newId("mem");
      await db.query("INSERT INTO members (id, org_id, email, first_name, last_name, role) VALUES ($1, $2, $3, $4, $5, $6)", [
        id,
        member.orgId,
        member.email,
        member.firstName ?? null,
        member.lastName ?? null,
        member.role,
      ]);
      return id;
    },
    /** Marks the member as departed; false when no current member matched. */
    async remove(orgId: string, memberId: string): Promise<boolean> {
      const rows = await db.query("UPDATE members SET left_at = now() WHERE org_id = $1 AND id = $2 AND left_at IS NULL RETURNING id", [orgId, memberId]);
      return rows.length > 0;
    },
    async isCurrent(orgId: string, memberId: string): Promise<boolean> {
      return (await db.query("SELECT 1 FROM members WHERE org_id = $1 AND id = $2 AND left_at IS NULL", [orgId, memberId])).length > 0;
    },
    /**
     * One page of current members, oldest first, and their total count: one
     * query (the count rides on each row), and a second only for a page past
     * the end.
     */
    async list(orgId: string, offset: number, limit: number): Promise<{ members: MemberRecord[]; total: number }> {
      const rows = await db.query<MemberRecord & { total: number }>(
        `SELECT id, email, first_name, last_name, role, count(*) OVER () AS total
           FROM members WHERE org_id = $1 AND left_at IS NULL ORDER BY position LIMIT $2 OFFSET $3`,
        [orgId, limit, offset],
      );
      if (rows.length === 0) {
        const count = await db.query<{ total: number }>("SELECT count(*) AS total FROM members WHERE org_id = $1 AND left_at IS NULL", [orgId]);
        return { members: [], total: count[0]?.total ?? 0 };
      }
      return { members: rows.map(({ total: _total, ...member }) => member), total: rows[0].total };
    },
  };
}

/** The members table. */
export type Members = ReturnType<typeof createMembers>;
