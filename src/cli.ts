import 'dotenv/config'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './config.js'
import { connectDatabase, startupFailureLine, waitForDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { seedCatalog } from './modules/catalog/catalog.seed.js'
import { createImageHost } from './modules/images/image-host.js'
import { ensureAdmin } from './modules/users/users.service.js'

const usage = `Usage: npm run cli -- <command>
  migrate                                        bring the database schema up to date
  create-admin --email E --password P [--name N] create an admin unless the e-mail is taken
  seed                                           add a small demo catalog (categories, products, images); idempotent`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const config = loadConfig()
  const handle = connectDatabase(config.databaseUrl, { timeouts: config.postgres })
  const { db } = handle
  // Waits for a database that is starting, for a bounded time, as the server does.
  const databaseReady = () => waitForDatabase(handle, config.databaseUrl, config.postgres.startupTimeoutMs)
  try {
    switch (command) {
      case 'migrate': {
        await databaseReady()
        const result = await migrateToLatest(db)
        const applied = result.results?.map((r) => r.migrationName) ?? []
        console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Schema is up to date')
        return 0
      }
      case 'create-admin': {
        const { values } = parseArgs({
          args: rest,
          options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } },
        })
        if (!values.email || !values.password || values.password.length < 6) {
          console.error('create-admin needs --email and --password (at least 6 characters)')
          return 2
        }
        await databaseReady()
        await migrateToLatest(db)
        const created = await ensureAdmin(db, { email: values.email, password: values.password, name: values.name ?? 'Admin' })
        console.log(created ? `Admin ${values.email.trim().toLowerCase()} created` : `A user with e-mail ${values.email} already exists; nothing changed`)
        return 0
      }
      case 'seed': {
        await databaseReady()
        await migrateToLatest(db)
        const seeded = await seedCatalog(db, createImageHost(config))
        console.log(`Demo catalog: ${seeded.categoriesCreated} categories and ${seeded.productsCreated} products added (existing ones kept)`)
        return 0
      }
      default:
        console.error(usage)
        return command ? 2 : 0
    }
  } finally {
    await db.destroy()
  }
}

try {
  process.exitCode = await main(process.argv.slice(2))
} catch (error) {
  const databaseLine = startupFailureLine(error, process.env.DATABASE_URL ?? '')
  if (error instanceof ConfigError) console.error(error.message)
  else if (databaseLine !== undefined) console.error(databaseLine)
  else console.error(error)
  process.exitCode = 1
}
