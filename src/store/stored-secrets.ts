import type { Queryable } from "./database.js";
import { hostTokenContext } from "./interns.js";
import { signingSecretContext } from "./webhook-settings.js";
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

/** Where sealed values live: each column, the row's key columns, and the context a value is sealed at. */
const sealedColumns = [
  { table: "interns", column: "host_token", keys: ["org_id", "id"], context: (row: Record<string, string>) => hostTokenContext(row.org_id, row.id) },
  { table: "organizations", column: "webhook_signing_secret", keys: ["id"], context: (row: Record<string, string>) => signingSecretContext(row.id) },
] as const;

/**
 * Seals every value still in clear. Each update only replaces the value it
 * read, so a replica sealing the same row, or an admin changing it meanwhile,
 * is never overwritten with a stale one.
 */
async function sealClearSecrets(db: Queryable, secrets: SecretBox): Promise<void> {
  for (const { table, column, keys, context } of sealedColumns) {
    const rows = await db.query<Record<string, string>>(`SELECT ${keys.join(", ")}, ${column} FROM ${table} WHERE NOT starts_with(${column}, $1)`, [sealedPrefix]);
    // $1… the keys, then the sealed value, then the value read.
    const match = keys.map((key, index) => `${key} = $${index + 1}`).join(" AND ");
    const update = `UPDATE ${table} SET ${column} = $${keys.length + 1} WHERE ${match} AND ${column} = $${keys.length + 2}`;
    for (const row of rows) {
      await db.query(update, [...keys.map((key) => row[key]), secrets.seal(row[column], context(row)), row[column]]);
    }
  }
}
