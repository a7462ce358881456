import type { Queryable } from "./database.js";

/**
 * The transaction-scoped advisory locks replicas take to do start-up work one
 * at a time, in one table so that no two uses share a key by accident.
 */
export const advisoryLocks = {
  migrations: 7366193,
  queueDefinitions: 7366194,
  bootstrap: 7366195,
} as const;

/** Waits for the lock `name`, held until the transaction `tx` ends. */
export async function takeAdvisoryLock(tx: Queryable, name: keyof typeof advisoryLocks): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1)", [advisoryLocks[name]]);
}
