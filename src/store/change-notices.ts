import pg from "pg";
import type { Database } from "./database.js";

/** A committed change to rows that processes cache lookups of (keys, interns, member pages). */
export type StoreChange =
  | { kind: "key"; keyId: string }
  | { kind: "member"; orgId?: string; memberId: string }
  | { kind: "organization"; orgId: string }
  | { kind: "intern"; orgId?: string; id: string };

/** What a subscriber hears: one change, or `everything` when notices may have been missed. */
export type ChangeNotice = StoreChange | { kind: "everything" };

/** Change notices between the processes that share a store. */
export interface ChangeNotices {
  /**
   * Tells every process on this store that `change` was committed: this
   * process's subscribers at once, the others as soon as the database relays
   * it. Never throws: a notice that cannot be sent is reported to `onError`,
   * and the caches' TTL still bounds how long others keep the old row.
   */
  publish(change: StoreChange): Promise<void>;
  /** Calls `listener` for every notice, whichever process published it. */
  subscribe(listener: (notice: ChangeNotice) => void): void;
  close(): Promise<void>;
}

/** The PostgreSQL channel notices travel on. */
export const changeChannel = "switchboard_changes";

const maxRetryMs = 30_000;
/** How often the listening connection proves it is alive, and how long it may take to. */
const defaultLiveness = { everyMs: 30_000, withinMs: 10_000 };

/**
 * Notices for the store behind `db`. On PostgreSQL they travel by
 * `NOTIFY`/`LISTEN` on a connection of their own, so a key revoked through one
 * replica is refused by every replica within moments instead of after the
 * lookup caches' TTL. When that connection drops, or stops answering a
 * periodic `SELECT 1` (a half-open connection, which would otherwise lose
 * notices silently), subscribers hear `everything` (notices may be lost until
 * it is back), and again once it is back. The embedded store belongs to one
 * process: its notices stay in it.
 */
export async function createChangeNotices(
  db: Database,
  options: { databaseUrl?: string; onError(error: unknown): void; liveness?: { everyMs: number; withinMs: number } },
): Promise<ChangeNotices> {
  const listeners = new Set<(notice: ChangeNotice) => void>();
  const emit = (notice: ChangeNotice) => {
    for (const listener of listeners) listener(notice);
  };
  const subscribe = (listener: (notice: ChangeNotice) => void) => void listeners.add(listener);
  const url = options.databaseUrl;
  if (!url) {
    return {
      async publish(change) {
        emit(change);
      },
      subscribe,
      async close() {},
    };
  }

  let closed = false;
  let current: pg.Client | undefined;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  const lost = new WeakSet<pg.Client>();
  const liveness = options.liveness ?? defaultLiveness;
  const probe = setInterval(() => {
    const client = current;
    if (!client) return;
    const late = setTimeout(() => drop(client, new Error(`the change-notice connection to PostgreSQL did not answer within ${liveness.withinMs} ms`)), liveness.withinMs);
    client.query("SELECT 1").then(
      () => clearTimeout(late),
      (error: unknown) => {
        clearTimeout(late);
        drop(client, error);
      },
    );
  }, liveness.everyMs);
  probe.unref();

  const drop = (client: pg.Client, error?: unknown) => {
    if (lost.has(client)) return;
    lost.add(client);
    if (current === client) current = undefined;
    void client.end().catch(() => undefined);
    if (closed) return;
    options.onError(error ?? new Error("the change-notice connection to PostgreSQL ended"));
    emit({ kind: "everything" });
    failures++;
    retry = setTimeout(() => void listen(), Math.min(maxRetryMs, 250 * 2 ** failures));
    retry.unref();
  };

  const listen = async () => {
    const client = new pg.Client({ connectionString: url });
    client.on("notification", (message) => {
      const change = parseChange(message.payload);
      if (change) emit(change);
    });
    client.on("error", (error) => drop(client, error));
    client.on("end", () => drop(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${changeChannel}`);
    } catch (error) {
      drop(client, error);
      return;
    }
    if (closed) {
      lost.add(client);
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    // Changes committed while nobody here was listening went unheard.
    if (failures > 0) emit({ kind: "everything" });
    failures = 0;
  };

  await listen();
  return {
    async publish(change) {
      emit(change);
      try {
        await db.query("SELECT pg_notify($1, $2)", [changeChannel, JSON.stringify(change)]);
      } catch (error) {
        options.onError(error);
      }
    },
    subscribe,
    async close() {
      closed = true;
      clearTimeout(retry);
      clearInterval(probe);
      const client = current;
      current = undefined;
      if (client) {
        lost.add(client);
        await client.end().catch(() => undefined);
      }
    },
  };
}

const text = (value: unknown): value is string => typeof value === "string" && value.length > 0;

/** A notice's payload, checked: anything else sent on the channel is ignored. */
export function parseChange(payload: string | undefined): StoreChange | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(payload ?? "");
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  switch (value.kind) {
    case "key":
      return text(value.keyId) ? { kind: "key", keyId: value.keyId } : undefined;
    case "member":
      if (!text(value.memberId) || (value.orgId !== undefined && !text(value.orgId))) return undefined;
      return value.orgId === undefined ? { kind: "member", memberId: value.memberId } : { kind: "member", orgId: value.orgId, memberId: value.memberId };
    case "organization":
      return text(value.orgId) ? { kind: "organization", orgId: value.orgId } : undefined;
    case "intern":
      if (!text(value.id) || (value.orgId !== undefined && !text(value.orgId))) return undefined;
      return value.orgId === undefined ? { kind: "intern", id: value.id } : { kind: "intern", orgId: value.orgId, id: value.id };
    default:
      return undefined;
  }
}
