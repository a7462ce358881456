import type { Database } from "./database.js";
import { takeAdvisoryLock } from "./advisory-locks.js";

/**
 * The schema, in order. Append only: a migration that has run anywhere is
 * never edited, so PGlite and PostgreSQL stores converge on the same schema.
 */
export const migrations: readonly { id: number; name: string; sql: string }[] = [
  {
    id: 1,
    name: "foundation",
    sql: `
      CREATE TABLE organizations (
        id text PRIMARY KEY,
        name text NOT NULL,
        in_programme boolean NOT NULL DEFAULT false,
        credits_usd numeric(20, 6) NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE members (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        email text NOT NULL,
        first_name text,
        last_name text,
        role text NOT NULL CHECK (role IN ('org:admin', 'org:member')),
        left_at timestamptz,
        position bigserial NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX members_by_org ON members (org_id, position) WHERE left_at IS NULL;
      CREATE UNIQUE INDEX members_email_per_org ON members (org_id, lower(email)) WHERE left_at IS NULL;
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        creator_member_id text NOT NULL REFERENCES members (id),
        key_hash bytea NOT NULL UNIQUE,
        kind text NOT NULL CHECK (kind IN ('standard', 'management')),
        has_grant boolean NOT NULL DEFAULT false,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE interns (
        org_id text NOT NULL REFERENCES organizations (id),
        id text NOT NULL,
        endpoint text NOT NULL,
        host_token text NOT NULL,
        state text NOT NULL CHECK (state IN ('provisioned', 'suspended', 'running')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, id)
      );
    `,
  },
  {
    id: 2,
    name: "video_jobs",
    sql: `
      ALTER TABLE organizations ADD COLUMN webhook_signing_secret text;
      ALTER TABLE organizations ADD COLUMN webhook_callback_url text;
      CREATE TABLE video_jobs (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        member_id text NOT NULL REFERENCES members (id),
        model text NOT NULL,
        request jsonb NOT NULL,
        callback_url text,
        session_id text,
        end_user text,
        trace jsonb,
        cost_usd numeric(20, 6) NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'cancelled', 'expired')),
        generation_id text,
        provider_job_id text,
        outputs jsonb,
        error text,
        claims integer NOT NULL DEFAULT 0,
        claimed_by text,
        lease_token text,
        lease_expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX video_jobs_unfinished ON video_jobs (expires_at) WHERE status IN ('pending', 'in_progress');
      CREATE TABLE webhook_deliveries (
        id bigserial PRIMARY KEY,
        job_id text NOT NULL REFERENCES video_jobs (id),
        url text NOT NULL,
        idempotency_key text NOT NULL,
        attempt integer NOT NULL,
        status_code integer,
        error text,
        duration_ms integer,
        outcome text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX webhook_deliveries_by_job ON webhook_deliveries (job_id, id);
    `,
  },
  {
    id: 3,
    name: "video_jobs_traceparent",
    // The W3C traceparent of the submission's span, so the job's work, later and elsewhere, joins its trace.
    sql: `ALTER TABLE video_jobs ADD COLUMN traceparent text;`,
  },
  {
    id: 4,
    name: "speech_charges",
    // A speech charge until its synthesis settles it: a process that dies in between leaves the row,
    // and the start-up or periodic sweep refunds it (by age, hence the index).
    sql: `
      CREATE TABLE speech_charges (
        generation_id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        usd numeric(20, 6) NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX speech_charges_by_age ON speech_charges (created_at);
    `,
  },
  {
    id: 5,
    name: "secrets_key_check",
    // One value sealed with the key the stored secrets are sealed with (at most one row), so a start with
    // another key is refused at once rather than failing at the first chat or webhook.
    sql: `
      CREATE TABLE secrets_key_check (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        sealed text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
];

/**
 * Brings the schema up to date. Runs entirely under an advisory lock so
 * replicas starting together on one PostgreSQL do not race.
 */
export async function migrate(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    await takeAdvisoryLock(tx, "migrations");
    // Under the lock too: two concurrent CREATE TABLE IF NOT EXISTS can both
    // go ahead, and the second fails on PostgreSQL's catalogue (23505).
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const applied = new Set((await tx.query<{ id: number }>("SELECT id FROM schema_migrations")).map((row) => row.id));
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query("INSERT INTO schema_migrations (id, name) VALUES ($1, $2)", [migration.id, migration.name]);
    }
  });
}

// Migrations hold no string literals with semicolons, so a plain split is exact.
function splitStatements(sql: string): string[] {
  return sql.split(";").map((statement) => statement.trim()).filter(Boolean);
}
