import { defineConfig } from 'vitest/config'

// The same suite runs on every database: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
// Each test file gets its own database (in-memory SQLite, or its own PostgreSQL schema), so files run in parallel.
// *.pgcluster.test.ts bring a PostgreSQL of their own (which they stop and start): they run once, in the sqlite project.
const postgres = process.env.TEST_DATABASE_URL
  ? [{ extends: true as const, test: { name: 'postgres', env: { TEST_DIALECT: 'postgres' }, exclude: ['test/**/*.redis.test.ts', 'test/**/*.sqlite.test.ts', 'test/**/*.s3.test.ts', 'test/**/*.pgcluster.test.ts', 'test/config.test.ts', 'node_modules/**'] } }]
  : []

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [{ extends: true, test: { name: 'sqlite', env: { TEST_DIALECT: 'sqlite' } } }, ...postgres],
  },
})
