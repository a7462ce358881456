import pg from "pg";
import type { Database, Queryable, Row } from "./database.js";

// int8 (counts, bigserial) as JS numbers: our counts stay far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));
// numeric (money) as JS numbers.
pg.types.setTypeParser(1700, (value) => Number(value));

/** Opens a pooled PostgreSQL database (`DATABASE_URL`); shared by replicas. */
export async function createPostgresDatabase(url: string, poolSize = 10): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // A client that fails while idle (the server restarted, an administrator
  // ended its session, or it is still closing after end()) is dropped by the
  // pool and replaced on demand; unheard, the error would crash the process.
  pool.on("error", () => undefined);
  // Fail at start-up, not at the first request, when the server is not there.
  const probe = await pool.connect();
  probe.release();
  return {
    kind: "postgres",
    async query<T extends Row>(sql: string, params: readonly unknown[] = []) {
      const result = await pool.query(sql, params as unknown[]);
      return result.rows as T[];
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const tx: Queryable = {
          async query<R extends Row>(sql: string, params: readonly unknown[] = []) {
            return (await client.query(sql, params as unknown[])).rows as R[];
          },
        };
        const result = await work(tx);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
