import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite, types } from "@electric-sql/pglite";
import type { Database, Queryable, Row } from "./database.js";
import { lockDataDir } from "./data-dir-lock.js";

const parsers = {
  [types.INT8]: (value: string) => Number(value),
  [types.NUMERIC]: (value: string) => Number(value),
};

/**
 * PostgreSQL's default 128 MB of shared buffers is sized for a machine of its
 * own; the embedded store's tables are small and its files sit in the OS page
 * cache anyway, so a smaller pool keeps ~100 MB off the server's resident memory.
 */
const postgresqlconf = "shared_buffers = 16MB";

/**
 * Opens the embedded store under `dataDir/pg` (or in memory when `dataDir` is
 * undefined), locking the directory so a second process fails loudly.
 */
export async function createPgliteDatabase(dataDir: string | undefined): Promise<Database> {
  let release = () => {};
  let pgDir: string | undefined;
  if (dataDir !== undefined) {
    release = lockDataDir(dataDir);
    pgDir = join(dataDir, "pg");
    mkdirSync(pgDir, { recursive: true });
  }
  let db: PGlite;
  try {
    db = await PGlite.create(pgDir, { parsers, postgresqlconf });
  } catch (error) {
    release();
    throw error;
  }
  // PGlite is one connection: transactions must not interleave with other
  // statements, so every statement waits its turn.
  let queue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };
  return {
    kind: "pglite",
    query<T extends Row>(sql: string, params: readonly unknown[] = []) {
      return serialized(async () => (await db.query<T>(sql, params as unknown[])).rows);
    },
    exec(sql: string) {
      return serialized(async () => {
        try {
          await db.exec(sql);
        } catch (error) {
          // A script that fails after its own BEGIN would leave the one
          // connection in an aborted transaction, failing every later
          // statement; a ROLLBACK outside a transaction is harmless.
          await db.exec("ROLLBACK").catch(() => undefined);
          throw error;
        }
      });
    },
    transaction<T>(work: (tx: Queryable) => Promise<T>) {
      return serialized(() =>
        db.transaction(async (inner) => {
          const tx: Queryable = {
            async query<R extends Row>(sql: string, params: readonly unknown[] = []) {
              return (await inner.query<R>(sql, params as unknown[])).rows;
            },
          };
          return work(tx);
        }),
      );
    },
    async close() {
      try {
        await db.close();
      } finally {
        release();
      }
    },
  };
}
