import type { Database } from "./database.js";
import { createApiKeys } from "./api-keys.js";
import { createChangeNotices, type ChangeNotices } from "./change-notices.js";
import { createInterns } from "./interns.js";
import { createMembers } from "./members.js";
import { createOrganizations } from "./organizations.js";
import { migrate } from "./migrations.js";
import { createPgliteDatabase } from "./pglite-database.js";
import { createPostgresDatabase } from "./postgres-database.js";
import type { SecretBox } from "./secret-box.js";
import { createSpeechCharges, type SpeechCharges } from "./speech-charges.js";
import { prepareStoredSecrets } from "./stored-secrets.js";
import { createVideoJobs } from "./video-jobs.js";
import { createWebhookSettings } from "./webhook-settings.js";
import { createWebhookDeliveries } from "./webhook-deliveries.js";

/** Where the store lives (the embedded PGlite directory, or PostgreSQL) and how its secrets are sealed. */
export interface StoreOptions {
  /** `postgres://…`; when set, `dataDir` is not used for the store. */
  databaseUrl?: string;
  /** Embedded store directory; undefined keeps it in memory (tests). */
  dataDir?: string;
  /** Seals host tokens and webhook signing secrets; the store refuses to open when it is not their key. */
  secrets: SecretBox;
  /** Hears what goes wrong with change notices (a lost PostgreSQL listener, a notice not sent); nothing is thrown. */
  onChangeNoticeError?(error: unknown): void;
}

/** Everything the core persists, one module per table. */
export interface Store {
  readonly db: Database;
  readonly organizations: ReturnType<typeof createOrganizations>;
  readonly webhookSettings: ReturnType<typeof createWebhookSettings>;
  readonly members: ReturnType<typeof createMembers>;
  readonly apiKeys: ReturnType<typeof createApiKeys>;
  readonly interns: ReturnType<typeof createInterns>;
  readonly speechCharges: SpeechCharges;
  readonly videoJobs: ReturnType<typeof createVideoJobs>;
  readonly webhookDeliveries: ReturnType<typeof createWebhookDeliveries>;
  /** Tells every process on this store about changes to cached rows. */
  readonly changes: ChangeNotices;
  /** The box the store seals secrets with, for table handles made inside a transaction. */
  readonly secrets: SecretBox;
  close(): Promise<void>;
}

/** Opens (and migrates) the configured store, and brings its stored secrets in line with the configured key. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { secrets } = options;
  const db = options.databaseUrl ? await createPostgresDatabase(options.databaseUrl) : await createPgliteDatabase(options.dataDir);
  try {
    await migrate(db);
    await prepareStoredSecrets(db, secrets);
  } catch (error) {
    await db.close();
    throw error;
  }
  const changes = await createChangeNotices(db, { databaseUrl: options.databaseUrl, onError: options.onChangeNoticeError ?? (() => undefined) });
  return {
    db,
    organizations: createOrganizations(db),
    webhookSettings: createWebhookSettings(db, secrets),
    members: createMembers(db),
    apiKeys: createApiKeys(db),
    interns: createInterns(db, secrets),
    speechCharges: createSpeechCharges(db),
    videoJobs: createVideoJobs(db),
    webhookDeliveries: createWebhookDeliveries(db),
    changes,
    secrets,
    async close() {
      await changes.close();
      await db.close();
    },
  };
}
