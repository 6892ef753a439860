import 'dotenv/config'
import { parseArgs } from 'node:util'
import { type Config, ConfigError, loadConfig } from './config.js'
import { configWarnings } from './config-warnings.js'
import { connectDatabase, startupFailureLine, waitForDatabase } from './db/connect.js'
import { migrateToLatest } from './db/migrate.js'
import { CopyMismatchError, CopyRefusedError, copyData, copyReportLines, progressOn } from './ops/copy-data.js'
import { seedCatalog } from './modules/catalog/catalog.seed.js'
import { createImageHost } from './modules/images/image-host.js'
import { DEFAULT_SWEEP_GRACE_MS, sweepOrphanImages, sweepReport } from './modules/images/image-sweep.js'
import { accountProblem } from './modules/users/users.schemas.js'
import { STAFF_ROLES, type StaffRole } from './modules/staff/permissions.js'
import { messages } from './shared/errors.js'
import { ensureAdmin, normalizeEmail } from './modules/users/users.service.js'

const usage = `Usage: npm run cli -- <command>
  migrate                                        bring the database schema up to date
  create-admin --email E --password P [--name N] [--staff-role R]
                                                 create an admin unless the e-mail is taken (the API's rules:
                                                 a valid e-mail, a password of 6 to 128 characters); R is owner
                                                 (the default), manager, catalog, fulfillment or support
  seed                                           add a small demo catalog (categories, products, images); idempotent
  images:sweep [--delete] [--grace-minutes N]    list stored product images that no product names (older than
                                                 N minutes, 60 by default); --delete removes them
  payments:reconcile                             ask Stripe about the intent of every pending order and apply
                                                 what it says (lost webhooks); prints what changed
  copy-data --from URL --to URL [--force]        copy every row of one database into another (sqlite:<file> or
                                                 postgres://...), checked table by table; --force replaces the
                                                 rows of a target that holds some
  copy-images --to s3|local                      copy the product images to the S3 bucket (S3_* variables) or to
                                                 the local folder, and point the images at them; idempotent`

/**
 * The arguments of create-admin, checked by the API's own rules for an account (an admin the log-in
 * form would refuse could never log in), or the line that explains what is wrong.
 */
function parseCreateAdmin(args: string[]): { email: string; password: string; name: string; staffRole?: StaffRole } | string {
  let values
  try {
    values = parseArgs({
      args,
      options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' }, 'staff-role': { type: 'string' } },
    }).values
  } catch (error) {
    return (error as Error).message
  }
  if (values.email === undefined || values.password === undefined) return 'needs --email and --password'
  const admin = { email: values.email.trim(), password: values.password, name: (values.name ?? 'Admin').trim() }
  const staffRole = STAFF_ROLES.find((role) => role === values['staff-role'])
  if (values['staff-role'] !== undefined && staffRole === undefined) return messages.badStaffRole
  return accountProblem(admin)?.message ?? (staffRole === undefined ? admin : { ...admin, staffRole })
}

async function copyDataCommand(args: string[], config: Config): Promise<number> {
  let values: { from?: string; to?: string; force?: boolean; 'batch-size'?: string }
  try {
    values = parseArgs({
      args,
      options: { from: { type: 'string' }, to: { type: 'string' }, force: { type: 'boolean' }, 'batch-size': { type: 'string' } },
    }).values
  } catch (error) {
    console.error(`copy-data: ${(error as Error).message}`)
    return 2
  }
  if (values.from === undefined || values.to === undefined) {
    console.error('copy-data: needs --from <database URL> and --to <database URL>')
    return 2
  }
  const batch = values['batch-size']
  if (batch !== undefined && !/^\d{1,6}$/.test(batch)) {
    console.error('copy-data: --batch-size must be a whole number of rows')
    return 2
  }
  try {
    const report = await copyData({
      from: values.from,
      to: values.to,
      force: values.force === true,
      ...(batch !== undefined ? { batchSize: Math.max(1, Number(batch)) } : {}),
      connectTimeoutMs: config.postgres.connectTimeoutMs,
      statementTimeoutMs: config.postgres.statementTimeoutMs,
      progress: progressOn(process.stderr),
    })
    for (const line of copyReportLines(report)) console.log(line)
    const seconds = report.elapsedMs / 1000
    console.log(
      `Copied ${report.rows} rows in ${report.tables.length} tables in ${seconds.toFixed(1)} s (${Math.round(report.rows / Math.max(seconds, 0.001))} rows/s); every table checked`,
    )
    return 0
  } catch (error) {
    if (error instanceof CopyRefusedError) {
      console.error(`copy-data: ${error.message}`)
      return 2
    }
    if (error instanceof CopyMismatchError) {
      for (const line of copyReportLines(error)) console.error(line)
      console.error(`copy-data: ${error.message}`)
      return 1
    }
    console.error(`copy-data: the copy failed and was rolled back, nothing was committed: ${(error as Error).message}`)
    return 1
  }
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
  // Names its own databases: DATABASE_URL is not opened.
  if (command === 'copy-data') return copyDataCommand(rest, config)
  const handle = connectDatabase(config.databaseUrl, { timeouts: config.postgres, preparedStatements: config.postgres.preparedStatements, nameSuffix: '-cli' })
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
      case 'copy-images': {
        let values: { to?: string }
        try {
          values = parseArgs({ args: rest, options: { to: { type: 'string' } } }).values
        } catch (error) {
          console.error(`copy-images: ${(error as Error).message}`)
          return 2
        }
        if (values.to !== 's3' && values.to !== 'local') {
          console.error('copy-images: needs --to s3 or --to local')
          return 2
        }
        // Both hosts, whatever STORAGE_DRIVER says now: the S3_* variables name the bucket, UPLOAD_DIR or DATA_DIR the folder.
        let bucket: Extract<Config['storage'], { driver: 's3' }>
        try {
          const storage = loadConfig({ ...process.env, STORAGE_DRIVER: 's3' }).storage
          if (storage.driver !== 's3') return 2
          bucket = storage
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error
          console.error(`copy-images: ${error.problems.join('; ')}`)
          return 2
        }
        // The AWS SDK loads only for this command.
        const { copyImages, copyImagesReportLines, localImages, s3Images } = await import('./ops/copy-images.js')
        const local = localImages(config.storage.uploadDir, config.publicUrl)
        const s3 = s3Images(bucket)
        const [from, to] = values.to === 's3' ? [local, s3] : [s3, local]
        await databaseReady()
        await migrateToLatest(db)
        let report
        try {
          report = await copyImages(db, from, to)
        } catch (error) {
          console.error(`copy-images: ${(error as Error).message}`)
          return 1
        }
        const names = { local: `the local folder (${config.storage.uploadDir})`, s3: `s3://${bucket.bucket}` }
        const lines = copyImagesReportLines(report, names[from.name], names[to.name])
        console.log(lines[0])
        for (const line of lines.slice(1)) console.error(line)
        return report.missing.length > 0 || report.failed.length > 0 ? 1 : 0
      }
      case 'payments:reconcile': {
        if (config.payments.provider !== 'stripe') {
          console.log('Payments are manual (STRIPE_SECRET_KEY is not set): nothing to reconcile')
          return 0
        }
        await databaseReady()
        // The whole service, without its timers or a listener: a change made here writes its events and e-mails
        // like any other (the running service delivers them), and goes through the same order lifecycle.
        const { buildApp } = await import('./app.js')
        const app = await buildApp(config, { database: handle, jobs: false, changeFeed: false, logger: { level: 'warn', stream: process.stderr } })
        const changes = await app.payments.reconcile().finally(() => app.close())
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
