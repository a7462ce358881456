/** A row as returned by the driver. */
export type Row = Record<string, unknown>;

/**
 * The few things the store needs from a SQL connection. PGlite and PostgreSQL
 * both speak it, so every query and migration is written once.
 */
export interface Database {
  /** Runs one parameterized statement ($1, $2, …) and returns its rows. */
  query<T extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs `work` in a transaction on one connection; rolls back on throw. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /** Which engine this is, for logs and readiness. */
  readonly kind: "pglite" | "postgres";
  close(): Promise<void>;
}

/** The part of {@link Database} usable inside a transaction. */
export type Queryable = Pick<Database, "query">;
