import type { Database } from "./database.js";
import { createOrganizations } from "./organizations.js";

/**
 * What {@link SpeechCharges.settle} did with a pending charge: `refunded` it,
 * `kept` it (the caller got the audio), or found it `gone`, because it was
 * settled before or a sweep refunded it.
 */
export type SpeechSettlement = "refunded" | "kept" | "gone";

/**
 * Speech charges in flight. A synthesis is charged before its engine starts
 * and refunded if the caller does not get the audio; the charge and a pending
 * row are written together, so a process that dies before settling leaves a
 * row that {@link SpeechCharges.refundStale} gives back, exactly once.
 */
export function createSpeechCharges(db: Database) {
  return {
    /**
     * Takes `usd` from the organization's balance and records the charge as
     * pending under `generationId`, in one transaction. Returns false, taking
     * and recording nothing, when the balance does not cover it.
     */
    async charge(orgId: string, usd: number, generationId: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        if (!(await createOrganizations(tx).charge(orgId, usd))) return false;
        await tx.query("INSERT INTO speech_charges (generation_id, org_id, usd) VALUES ($1, $2, $3)", [generationId, orgId, usd]);
        return true;
      });
    },
    /**
     * Ends a pending charge: removes its row and, when `refund` is true, gives
     * the credits back, in one transaction. Only the call that removes the
     * row refunds, so a charge is never refunded twice.
     */
    async settle(generationId: string, refund: boolean): Promise<SpeechSettlement> {
      return db.transaction(async (tx) => {
        const rows = await tx.query<{ org_id: string; usd: number }>("DELETE FROM speech_charges WHERE generation_id = $1 RETURNING org_id, usd", [generationId]);
        const row = rows[0];
        if (row === undefined) return "gone";
        if (!refund) return "kept";
        await createOrganizations(tx).refund(row.org_id, row.usd);
        return "refunded";
      });
    },
    /**
     * Refunds every pending charge older than `olderThanSeconds` (or all of
     * them): charges whose synthesis has outlived any engine's deadlines, so
     * its process died. Returns the generation ids it refunded. Concurrent
     * sweeps (replicas) each refund only the rows their own DELETE removed.
     */
    async refundStale(olderThanSeconds: number | "all"): Promise<string[]> {
      return db.transaction(async (tx) => {
        const rows =
          olderThanSeconds === "all"
            ? await tx.query<{ generation_id: string; org_id: string; usd: number }>("DELETE FROM speech_charges RETURNING generation_id, org_id, usd")
            : await tx.query<{ generation_id: string; org_id: string; usd: number }>(
                "DELETE FROM speech_charges WHERE created_at < now() - $1 * interval '1 second' RETURNING generation_id, org_id, usd",
                [olderThanSeconds],
              );
        const organizations = createOrganizations(tx);
        // One order of organization locks for every sweep, so two sweeps never wait on each other in a cycle.
        for (const row of [...rows].sort((a, b) => a.org_id.localeCompare(b.org_id))) await organizations.refund(row.org_id, row.usd);
        return rows.map((row) => row.generation_id);
      });
    },
  };
}

/** The speech_charges table. */
export type SpeechCharges = ReturnType<typeof createSpeechCharges>;
