import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import type { DatabaseHandle, Dialect } from '../db/connect.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    dialect: Dialect
  }
}

/** Makes the database available to every module; closes it when the app closes. */
async function databasePlugin(app: FastifyInstance, options: { handle: DatabaseHandle; ownsDatabase: boolean }) {
  app.decorate('db', options.handle.db)
  app.decorate('dialect', options.handle.dialect)
  if (options.ownsDatabase) app.addHook('onClose', async () => options.handle.db.destroy())
}

export default fp(databasePlugin, { name: 'database' })
