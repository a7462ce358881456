import { defineConfig } from "vitest/config";

// Gateway tests (test/*.test.ts) touch the store, so they run twice: on the
// embedded PGlite store and on PostgreSQL. Tests of parts that own no store
// (intern host, providers) run once.
const gatewayTests = ["test/*.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Servers under test run from dist/, as operators run them: compiled once per run, before any test.
    globalSetup: ["test/support/build-dist.ts"],
    // CI reads the counts from the JSON report (.ci/run).
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".tmp/vitest-results.json" }]] : ["default"],
    projects: [
      {
        extends: true,
        test: { name: "pglite", include: ["test/**/*.test.ts"], env: { SWITCHBOARD_TEST_STORE: "pglite" } },
      },
      {
        extends: true,
        test: { name: "postgres", include: gatewayTests, env: { SWITCHBOARD_TEST_STORE: "postgres" } },
      },
    ],
  },
});
