import 'dotenv/config'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './config.js'
import { configWarnings } from './config-warnings.js'
import { connectDatabase, startupFailureLine, waitForDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { seedCatalog } from './modules/catalog/catalog.seed.js'
import { createPayments } from './modules/payments/payments.plugin.js'
import { reconcilePayments } from './modules/payments/payments.service.js'
import { createImageHost } from './modules/images/image-host.js'
import { DEFAULT_SWEEP_GRACE_MS, sweepOrphanImages, sweepReport } from './modules/images/image-sweep.js'
import { accountProblem } from './modules/users/users.schemas.js'
import { ensureAdmin, normalizeEmail } from './modules/users/users.service.js'

const usage = `Usage: npm run cli -- <command>
  migrate                                        bring the database schema up to date
  create-admin --email E --password P [--name N] create an admin unless the e-mail is taken (the API's rules:
                                                 a valid e-mail, a password of 6 to 128 characters)
  seed                                           add a small demo catalog (categories, products, images); idempotent
  images:sweep [--delete] [--grace-minutes N]    list stored product images that no product names (older than
                                                 N minutes, 60 by default); --delete removes them
  payments:reconcile                             ask Stripe about the intent of every pending order and apply
                                                 what it says (lost webhooks); prints what changed`

/**
 * The arguments of create-admin, checked by the API's own rules for an account (an admin the log-in
 * form would refuse could never log in), or the line that explains what is wrong.
 */
function parseCreateAdmin(args: string[]): { email: string; password: string; name: string } | string {
  let values
  try {
    values = parseArgs({ args, options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } } }).values
  } catch (error) {
    return (error as Error).message
  }
  if (values.email === undefined || values.password === undefined) return 'needs --email and --password'
  const admin = { email: values.email.trim(), password: values.password, name: (values.name ?? 'Admin').trim() }
  return accountProblem(admin)?.message ?? admin
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  // Checked before anything is opened: a refused admin leaves nothing behind.
  const admin = command === 'create-admin' ? parseCreateAdmin(rest) : null
  if (typeof admin === 'string') {
    console.error(`create-admin: ${admin}\n${usage}`)
    return 2
  }
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
        if (!admin) return 2
        await databaseReady()
        await migrateToLatest(db)
        const created = await ensureAdmin(db, admin)
        const email = normalizeEmail(admin.email)
        console.log(created ? `Admin ${email} created` : `A user with e-mail ${email} already exists; nothing changed`)
        return 0
      }
      case 'seed': {
        // The demo's image URLs are stored from PUBLIC_URL: the same warning as the service's start-up.
        for (const warning of configWarnings(config)) console.error(`Warning: ${warning}`)
        await databaseReady()
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
      case 'payments:reconcile': {
        if (config.payments.provider !== 'stripe') {
          console.log('Payments are manual (STRIPE_SECRET_KEY is not set): nothing to reconcile')
          return 0
        }
        await databaseReady()
        await migrateToLatest(db)
        const log = { error: (o: object, m: string) => console.error(m, o), warn: (o: object, m: string) => console.error(m, o), info: () => {} }
        const changes = await reconcilePayments(db, await createPayments(config, log))
        for (const { orderId, outcome } of changes) console.log(`order ${orderId}: ${outcome}`)
        console.log(`${changes.length} order${changes.length === 1 ? '' : 's'} changed`)
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
