import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { DatabaseStatus } from '../db/availability.js'
import type { Database } from '../db/database.js'
import type { DatabaseHandle, Dialect } from '../db/connect.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    /**
     * For long reads only (the catalog's facets): SQLite's reader threads on a file database (db/sqlite-readers.ts),
     * PostgreSQL's pool for them (db/connect.ts), else `db` itself. Never for a write, nor a read that must see the
     * request's own transaction.
     */
    reads: Kysely<Database>
    dialect: Dialect
    /** Whether the database can be reached now (db/availability.ts). */
    databaseStatus: DatabaseStatus
  }
}

/**
 * Makes the database available to every module; closes it when the app closes. Says once when the
 * database is lost (queries then answer 503 at once) and once when it is back.
 */
async function databasePlugin(app: FastifyInstance, options: { handle: DatabaseHandle; ownsDatabase: boolean }) {
  const { handle } = options
  app.decorate('db', handle.db)
  app.decorate('reads', handle.reads ?? handle.db)
  app.decorate('dialect', handle.dialect)
  app.decorate('databaseStatus', handle.status)
  let closing = false
  handle.status.onLost((error) => {
    if (!closing) app.log.error({ err: error }, 'database lost: requests that need it answer 503 until it is back')
  })
  handle.status.onBack(() => {
    if (!closing) app.log.info('database is back')
  })
  app.addHook('onClose', async () => {
    closing = true
    if (options.ownsDatabase) await handle.db.destroy()
  })
}

export default fp(databasePlugin, { name: 'database' })
