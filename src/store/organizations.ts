import type { Queryable } from "./database.js";
import { newId } from "./ids.js";

/** Organizations: programme membership and credit balance (webhook settings: `webhook-settings.ts`). */
export function createOrganizations(db: Queryable) {
  return {
    /** Creates an organization and returns its id. */
    async create(name: string): Promise<string> {
      const id = newId("org");
      await db.query("INSERT INTO organizations (id, name) VALUES ($1, $2)", [id, name]);
      return id;
    },
    async exists(id: string): Promise<boolean> {
      return (await db.query("SELECT 1 FROM organizations WHERE id = $1", [id])).length > 0;
    },
    /** Returns false when the organization does not exist. */
    async setProgramme(id: string, member: boolean): Promise<boolean> {
      return (await db.query("UPDATE organizations SET in_programme = $2 WHERE id = $1 RETURNING id", [id, member])).length > 0;
    },
    /** Returns false when the organization does not exist. */
    async setCredits(id: string, usd: number): Promise<boolean> {
      return (await db.query("UPDATE organizations SET credits_usd = $2 WHERE id = $1 RETURNING id", [id, usd])).length > 0;
    },
    async credits(id: string): Promise<number | undefined> {
      const rows = await db.query<{ credits_usd: number }>("SELECT credits_usd FROM organizations WHERE id = $1", [id]);
      return rows[0]?.credits_usd;
    },
    /**
     * Takes `usd` from the balance when it covers it, atomically; returns
     * whether it did.
     */
    async charge(id: string, usd: number): Promise<boolean> {
      const rows = await db.query("UPDATE organizations SET credits_usd = credits_usd - $2 WHERE id = $1 AND credits_usd >= $2 RETURNING id", [id, usd]);
      return rows.length > 0;
    },
    /** Gives back a charge for work that was not delivered (a synthesis refused before any audio). */
    async refund(id: string, usd: number): Promise<void> {
      await db.query("UPDATE organizations SET credits_usd = credits_usd + $2 WHERE id = $1", [id, usd]);
    },
  };
}

/** The organizations table. */
export type Organizations = ReturnType<typeof createOrganizations>;
