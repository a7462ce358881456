import { createRequire } from "node:module";
import PgBoss from "pg-boss";
import { takeAdvisoryLock } from "./advisory-locks.js";
import type { Database, Queryable } from "./database.js";
import { createPostgresDatabase } from "./postgres-database.js";

/** How a queue treats its jobs; fixed when the queue is defined. */
export interface QueueDefinition {
  /** Retries after a handler throws (or its worker vanished past `expireInSeconds`). */
  retryLimit: number;
  retryDelaySeconds: number;
  /** Doubles the delay on each retry. */
  retryBackoff: boolean;
  /** A job active this long is presumed lost and retried. */
  expireInSeconds: number;
}

/** Options for {@link createJobQueue}. */
export interface JobQueueOptions {
  /** The store's database; on the embedded store pg-boss runs over it. */
  db: Database;
  /** PostgreSQL: pg-boss gets a small pool of its own on this URL, so polling never waits behind API queries. */
  databaseUrl?: string;
  /** pg-boss reports background failures (maintenance, fetch loops, recording a job's end) here. */
  onError: (error: Error) => void;
}

/** Options for {@link JobQueue.work}. */
export interface WorkOptions {
  /** Jobs of this queue run at once in this process. */
  workers: number;
  /** How often an idle worker looks for jobs sent by other replicas (at least 0.5). */
  pollIntervalSeconds: number;
}

/**
 * A durable queue on the store's own database (pg-boss), so a job survives a
 * restart and is taken by one worker across replicas (`FOR UPDATE SKIP
 * LOCKED`). Sending inside a store transaction commits the job with the rows
 * it refers to, or neither.
 */
export interface JobQueue {
  /** Creates or upgrades pg-boss's schema and starts its maintenance. */
  start(): Promise<void>;
  /** Creates a queue, or brings an existing one to this definition. */
  define(name: string, definition: QueueDefinition): Promise<void>;
  /** Queues a job; with `tx`, as part of that transaction. */
  send(name: string, data: object, tx?: Queryable): Promise<void>;
  /** Runs `handler` for each job; a throw fails the job, which is retried per its queue. */
  work<T extends object>(name: string, options: WorkOptions, handler: (data: T) => Promise<void>): Promise<void>;
  /**
   * Jobs of a queue taken by a worker more than `seconds` ago and not ended:
   * their handler is still busy, or its process died before the handler
   * recorded anything of its own.
   */
  activeLongerThan(name: string, seconds: number): Promise<ActiveJob[]>;
  /** Fails these active jobs as if their handlers had thrown, so the queue retries them per its definition. */
  retry(name: string, ids: readonly string[]): Promise<void>;
  /** Wakes this process's idle workers of a queue, after a send committed here. */
  notify(name: string): void;
  /** Stops fetching, waits for running handlers, then for pg-boss's last writes. */
  stop(): Promise<void>;
}

/** A job a worker took: its queue id and what it was sent with. */
export type ActiveJob = {
  id: string;
  data: Record<string, unknown>;
};

/** The adapter pg-boss's `db` option takes. */
type PgBossDb = { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };

/** pg-boss's schema (its default, named so the statements below match). */
const bossSchema = "pgboss";

/**
 * The statements with which a pg-boss 10 worker completes or fails the job
 * its handler ran: issued without being awaited (Manager.watch), so their
 * failure would be an unhandled rejection, which ends the process.
 */
const unawaitedStatements: ReadonlySet<string> = (() => {
  const plans = createRequire(import.meta.url)("pg-boss/src/plans.js") as Record<"completeJobs" | "failJobsById", (schema: string) => string>;
  return new Set([plans.completeJobs(bossSchema), plans.failJobsById(bossSchema)]);
})();

/**
 * pg-boss over our Database. pg-boss sends its schema, migrations and
 * maintenance as `BEGIN; …; COMMIT;` scripts and everything else as single
 * statements; PGlite takes scripts only through `exec`, so scripts go there
 * (pg-boss reads no rows from them). Every call is tracked, so stopping can
 * wait for the writes pg-boss does not await (completing a job). Those
 * writes report a failure to `onError` and answer "no job affected" instead:
 * the job stays active until it expires, and pg-boss then retries it.
 */
function pgBossDb(db: Database, inFlight: Set<Promise<unknown>>, onError: (error: Error) => void): PgBossDb {
  return {
    executeSql(text, values) {
      let call = /^\s*BEGIN\s*;/i.test(text) ? db.exec(text).then(() => ({ rows: [] as unknown[] })) : db.query(text, values ?? []).then((rows) => ({ rows }));
      if (unawaitedStatements.has(text)) {
        call = call.catch((error: unknown) => {
          onError(new Error("recording the end of a job failed; it is retried once it expires", { cause: error }));
          return { rows: [{ count: "0" }] };
        });
      }
      inFlight.add(call);
      void call.finally(() => inFlight.delete(call)).catch(() => undefined);
      return call;
    },
  };
}

/**
 * pg-boss on one of our connections or transactions, for single statements
 * (`send`, `fail`) whose failure must reach the caller: unlike the adapter of
 * pg-boss's own loops, it reports nothing aside and swallows nothing.
 */
function statementDb(queryable: Queryable): PgBossDb {
  return { executeSql: async (text, values) => ({ rows: await queryable.query(text, values ?? []) }) };
}

/** How long stopping waits for running handlers; ours return promptly once aborted. */
const stopGraceMs = 5_000;

/** Creates the queue; call `start()` before anything else. */
export async function createJobQueue(options: JobQueueOptions): Promise<JobQueue> {
  const ownDb = options.databaseUrl ? await createPostgresDatabase(options.databaseUrl, 4) : undefined;
  const bossDb = ownDb ?? options.db;
  const inFlight = new Set<Promise<unknown>>();
  const boss = new PgBoss({
    db: pgBossDb(bossDb, inFlight, options.onError) as PgBoss.Db,
    schema: bossSchema,
    // No cron schedules; no periodic state counts.
    schedule: false,
    maintenanceIntervalSeconds: 30,
  });
  boss.on("error", options.onError);
  const workerIds = new Map<string, string[]>();
  return {
    async start() {
      await boss.start();
    },
    async define(name, definition) {
      const queue = {
        name,
        retryLimit: definition.retryLimit,
        retryDelay: definition.retryDelaySeconds,
        retryBackoff: definition.retryBackoff,
        expireInSeconds: definition.expireInSeconds,
      };
      // Creating leaves an existing queue as it was; the update carries a changed configuration.
      const createOrUpdate = async () => {
        await boss.createQueue(name, queue);
        await boss.updateQueue(name, queue);
      };
      // Replicas starting together on PostgreSQL deadlock inside pg-boss's create_queue (PostgreSQL then
      // aborts one start): one replica defines at a time, under a lock held by this transaction. The
      // embedded store has one process, and one connection this transaction would hold.
      if (ownDb) {
        await ownDb.transaction(async (tx) => {
          await takeAdvisoryLock(tx, "queueDefinitions");
          await createOrUpdate();
        });
      } else {
        await createOrUpdate();
      }
    },
    async send(name, data, tx) {
      await boss.send(name, data, tx ? { db: statementDb(tx) as PgBoss.Db } : {});
    },
    async work<T extends object>(name: string, workOptions: WorkOptions, handler: (data: T) => Promise<void>) {
      const ids: string[] = [];
      for (let i = 0; i < workOptions.workers; i++) {
        ids.push(await boss.work<T>(name, { batchSize: 1, pollingIntervalSeconds: workOptions.pollIntervalSeconds }, ([job]) => handler(job.data)));
      }
      workerIds.set(name, [...(workerIds.get(name) ?? []), ...ids]);
    },
    async activeLongerThan(name, seconds) {
      // pg-boss has no call for this; its job table is read directly, through its (name, state) partition.
      return bossDb.query<ActiveJob>(
        `SELECT id, data FROM ${bossSchema}.job WHERE name = $1 AND state = 'active' AND started_on < now() - make_interval(secs => $2)`,
        [name, seconds],
      );
    },
    async retry(name, ids) {
      // Through its own adapter: on pg-boss's, a failed `fail` is swallowed as if a worker had recorded its end.
      if (ids.length > 0) await boss.fail(name, [...ids], { db: statementDb(bossDb) as PgBoss.Db });
    },
    notify(name) {
      for (const id of workerIds.get(name) ?? []) boss.notifyWorker(id);
    },
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: stopGraceMs });
      await Promise.allSettled([...inFlight]);
      await ownDb?.close();
    },
  };
}
