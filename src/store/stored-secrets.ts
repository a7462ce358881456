import type { Queryable } from "./database.js";
import { hostTokenContext } from "./interns.js";
import { signingSecretContext } from "./organizations.js";
import { sealedPrefix, type SecretBox } from "./secret-box.js";

const checkContext = "secrets_key_check";
const checkPlaintext = "switchboard secrets key check";

/**
 * Makes the stored secrets agree with `secrets` before anything reads them:
 * refuses a key other than the one they were sealed with (or none, once
 * they are sealed), so a wrong key fails at start rather than at the first
 * chat; then seals the values still in clear (rows written before sealing,
 * or while no key was set). Safe with several replicas starting at once.
 */
export async function prepareStoredSecrets(db: Queryable, secrets: SecretBox): Promise<void> {
  await checkSecretsKey(db, secrets);
  if (secrets.sealing) await sealClearSecrets(db, secrets);
}

async function checkSecretsKey(db: Queryable, secrets: SecretBox): Promise<void> {
  let check = await storedCheck(db);
  if (check === undefined && secrets.sealing) {
    await db.query("INSERT INTO secrets_key_check (sealed) VALUES ($1) ON CONFLICT DO NOTHING", [secrets.seal(checkPlaintext, checkContext)]);
    // A replica starting at the same moment may have written its own first: the stored one is the one to match.
    check = await storedCheck(db);
  }
  if (check === undefined) return;
  if (!secrets.sealing) throw new Error("This database's secrets are sealed, but SECRETS_KEY is not set: set the SECRETS_KEY they were sealed with.");
  let opened: string | undefined;
  try {
    opened = secrets.open(check, checkContext);
  } catch {
    opened = undefined;
  }
  if (opened !== checkPlaintext) {
    throw new Error("SECRETS_KEY does not match the key this database's secrets were sealed with (on the embedded store without SECRETS_KEY: DATA_DIR/secrets-key).");
  }
}

async function storedCheck(db: Queryable): Promise<string | undefined> {
  return (await db.query<{ sealed: string }>("SELECT sealed FROM secrets_key_check"))[0]?.sealed;
}

/**
 * Seals every value still in clear. Each update only replaces the value it
 * read, so a replica sealing the same row, or an admin changing it meanwhile,
 * is never overwritten with a stale one.
 */
async function sealClearSecrets(db: Queryable, secrets: SecretBox): Promise<void> {
  const interns = await db.query<{ org_id: string; id: string; host_token: string }>(
    "SELECT org_id, id, host_token FROM interns WHERE NOT starts_with(host_token, $1)",
    [sealedPrefix],
  );
  for (const row of interns) {
    await db.query("UPDATE interns SET host_token = $3 WHERE org_id = $1 AND id = $2 AND host_token = $4", [
      row.org_id,
      row.id,
      secrets.seal(row.host_token, hostTokenContext(row.org_id, row.id)),
      row.host_token,
    ]);
  }
  const organizations = await db.query<{ id: string; webhook_signing_secret: string }>(
    "SELECT id, webhook_signing_secret FROM organizations WHERE NOT starts_with(webhook_signing_secret, $1)",
    [sealedPrefix],
  );
  for (const row of organizations) {
    await db.query("UPDATE organizations SET webhook_signing_secret = $2 WHERE id = $1 AND webhook_signing_secret = $3", [
      row.id,
      secrets.seal(row.webhook_signing_secret, signingSecretContext(row.id)),
      row.webhook_signing_secret,
    ]);
  }
}
