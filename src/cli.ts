import 'dotenv/config'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './config.js'
import { connectDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { seedCatalog } from './modules/catalog/catalog.seed.js'
import { createImageHost } from './modules/images/image-host.js'
import { DEFAULT_SWEEP_GRACE_MS, sweepOrphanImages, sweepReport } from './modules/images/image-sweep.js'
import { ensureAdmin } from './modules/users/users.service.js'

const usage = `Usage: npm run cli -- <command>
  migrate                                        bring the database schema up to date
  create-admin --email E --password P [--name N] create an admin unless the e-mail is taken
  seed                                           add a small demo catalog (categories, products, images); idempotent
  images:sweep [--delete] [--grace-minutes N]    list stored product images that no product names (older than
                                                 N minutes, 60 by default); --delete removes them`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const config = loadConfig()
  const { db } = connectDatabase(config.databaseUrl)
  try {
    switch (command) {
      case 'migrate': {
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
        await migrateToLatest(db)
        const created = await ensureAdmin(db, { email: values.email, password: values.password, name: values.name ?? 'Admin' })
        console.log(created ? `Admin ${values.email.trim().toLowerCase()} created` : `A user with e-mail ${values.email} already exists; nothing changed`)
        return 0
      }
      case 'seed': {
        await migrateToLatest(db)
        const seeded = await seedCatalog(db, createImageHost(config))
        console.log(`Demo catalog: ${seeded.categoriesCreated} categories and ${seeded.productsCreated} products added (existing ones kept)`)
        return 0
      }
      case 'images:sweep': {
        let values: { delete?: boolean; 'grace-minutes'?: string }
        try {
          values = parseArgs({ args: rest, options: { delete: { type: 'boolean' }, 'grace-minutes': { type: 'string' } } }).values
        } catch (error) {
          console.error(`images:sweep: ${(error as Error).message}\n${usage}`)
          return 2
        }
        const minutes = values['grace-minutes']
        if (minutes !== undefined && !/^\d{1,6}$/.test(minutes)) {
          console.error('images:sweep: --grace-minutes must be a whole number of minutes (0 or more)')
          return 2
        }
        const options = { delete: values.delete === true, graceMs: minutes === undefined ? DEFAULT_SWEEP_GRACE_MS : Number(minutes) * 60_000 }
        await migrateToLatest(db)
        const result = await sweepOrphanImages(db, createImageHost(config), options)
        for (const line of sweepReport(result, options)) console.log(line)
        for (const { key, error } of result.failed) console.error(`Could not remove ${key}: ${(error as Error).message}`)
        return result.failed.length > 0 ? 1 : 0
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
  if (error instanceof ConfigError) console.error(error.message)
  else console.error(error)
  process.exitCode = 1
}
