import { describe, expect, it } from "vitest";
import { createPgliteDatabase } from "../../src/store/pglite-database.js";

describe("embedded store", () => {
  it("runs with a small shared buffer pool, not PostgreSQL's 128 MB default", async () => {
    const db = await createPgliteDatabase(undefined);
    try {
      expect(await db.query("SHOW shared_buffers")).toEqual([{ shared_buffers: "16MB" }]);
    } finally {
      await db.close();
    }
  });
});
