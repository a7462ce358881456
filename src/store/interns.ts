import type { Queryable } from "./database.js";
import type { SecretBox } from "./secret-box.js";

/** Lifecycle states of an intern. */
export const internStates = ["provisioned", "suspended", "running"] as const;

/** One of {@link internStates}. */
export type InternState = (typeof internStates)[number];

/** An intern and the host that serves it. */
export interface InternRecord {
  orgId: string;
  id: string;
  endpoint: string;
  hostToken: string;
  state: InternState;
}

/** Where an intern's host token lives: the data its sealed form is bound to, so it opens in no other row. */
export function hostTokenContext(orgId: string, id: string): string {
  // Organization ids are generated without ':', so the first one after the column name ends it.
  return `interns.host_token:${orgId}:${id}`;
}

/**
 * The interns registry; every lookup is scoped to an organization. Host
 * tokens are sealed with `secrets` on write and opened on read.
 */
export function createInterns(db: Queryable, secrets: SecretBox) {
  return {
    async add(intern: InternRecord): Promise<void> {
      await db.query("INSERT INTO interns (org_id, id, endpoint, host_token, state) VALUES ($1, $2, $3, $4, $5)", [
        intern.orgId,
        intern.id,
        intern.endpoint,
        secrets.seal(intern.hostToken, hostTokenContext(intern.orgId, intern.id)),
        intern.state,
      ]);
    },
    async find(orgId: string, id: string): Promise<InternRecord | undefined> {
      // PostgreSQL refuses U+0000 in text, so no stored id holds it.
      if (id.includes("\u0000")) return undefined;
      const rows = await db.query<{ org_id: string; id: string; endpoint: string; host_token: string; state: InternState }>(
        "SELECT org_id, id, endpoint, host_token, state FROM interns WHERE org_id = $1 AND id = $2",
        [orgId, id],
      );
      const row = rows[0];
      return row && { orgId: row.org_id, id: row.id, endpoint: row.endpoint, hostToken: secrets.open(row.host_token, hostTokenContext(row.org_id, row.id)), state: row.state };
    },
    /** Points an intern at a (new) host endpoint; false when it does not exist. */
    async setEndpoint(orgId: string, id: string, endpoint: string, hostToken: string): Promise<boolean> {
      const sealed = secrets.seal(hostToken, hostTokenContext(orgId, id));
      const rows = await db.query("UPDATE interns SET endpoint = $3, host_token = $4 WHERE org_id = $1 AND id = $2 RETURNING id", [orgId, id, endpoint, sealed]);
      return rows.length > 0;
    },
    /**
     * Sets the state of the intern `id`, in `orgId` when given; returns how
     * many interns matched (more than one means the id is ambiguous).
     */
    async setState(orgId: string | undefined, id: string, state: InternState): Promise<number> {
      if (orgId) {
        return (await db.query("UPDATE interns SET state = $3 WHERE org_id = $1 AND id = $2 RETURNING id", [orgId, id, state])).length;
      }
      const matches = await db.query<{ org_id: string }>("SELECT org_id FROM interns WHERE id = $1", [id]);
      if (matches.length !== 1) return matches.length;
      await db.query("UPDATE interns SET state = $2 WHERE id = $1", [id, state]);
      return 1;
    },
  };
}

/** The interns table. */
export type Interns = ReturnType<typeof createInterns>;
