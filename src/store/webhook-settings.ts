import type { Queryable } from "./database.js";
import type { SecretBox } from "./secret-box.js";

/** Where an organization's webhook signing secret lives: the data its sealed form is bound to, so it opens in no other row. */
export function signingSecretContext(id: string): string {
  return `organizations.webhook_signing_secret:${id}`;
}

/**
 * An organization's webhook settings (columns of `organizations`): the
 * signing secret, sealed with `secrets` on write and opened on read, and
 * the default callback URL.
 */
export function createWebhookSettings(db: Queryable, secrets: SecretBox) {
  return {
    /**
     * Sets the webhook signing secret and default callback URL: a value
     * replaces, null clears, undefined keeps. Returns false when the
     * organization does not exist.
     */
    async set(id: string, settings: { signingSecret?: string | null; callbackUrl?: string | null }): Promise<boolean> {
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
    async get(id: string): Promise<{ signingSecret?: string; callbackUrl?: string }> {
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
