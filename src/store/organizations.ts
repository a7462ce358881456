import type { Queryable } from "./database.js";
import { newId } from "./ids.js";
import type { SecretBox } from "./secret-box.js";

/** Where an organization's webhook signing secret lives: the data its sealed form is bound to, so it opens in no other row. */
export function signingSecretContext(id: string): string {
  return `organizations.webhook_signing_secret:${id}`;
}

/**
 * Organizations: programme membership, credit balance and webhook settings.
 * The signing secret is sealed with `secrets` on write and opened on read.
 */
export function createOrganizations(db: Queryable, secrets: SecretBox) {
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
    /**
     * Sets the webhook signing secret and default callback URL: a value
     * replaces, null clears, undefined keeps. Returns false when the
     * organization does not exist.
     */
    async setWebhookSettings(id: string, settings: { signingSecret?: string | null; callbackUrl?: string | null }): Promise<boolean> {
      const signingSecret = typeof settings.signingSecret === "string" ? secrets.seal(settings.signingSecret, signingSecretContext(id)) : null;
      const rows = await db.query(
        `UPDATE organizations
            SET webhook_signing_secret = CASE WHEN $2 THEN $3 ELSE webhook_signing_secret END,
                webhook_callback_url = CASE WHEN $4 THEN $5 ELSE webhook_callback_url END
          WHERE id = $1 RETURNING id`,
        [id, settings.signingSecret !== undefined, signingSecret, settings.callbackUrl !== undefined, settings.callbackUrl ?? null],
      );
      return rows.length > 0;
    },
    /** The organization's webhook signing secret and default callback URL, when set. */
    async webhookSettings(id: string): Promise<{ signingSecret?: string; callbackUrl?: string }> {
      const rows = await db.query<{ webhook_signing_secret: string | null; webhook_callback_url: string | null }>(
        "SELECT webhook_signing_secret, webhook_callback_url FROM organizations WHERE id = $1",
        [id],
      );
      const row = rows[0];
      return {
        ...(row?.webhook_signing_secret && { signingSecret: secrets.open(row.webhook_signing_secret, signingSecretContext(id)) }),
        ...(row?.webhook_callback_url && { callbackUrl: row.webhook_callback_url }),
      };
    },
  };
}

/** The organizations table. */
export type Organizations = ReturnType<typeof createOrganizations>;
