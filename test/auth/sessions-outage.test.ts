import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { connectDatabase, type DatabaseHandle } from '../../src/db/connect.js'
import { dialect, testConfig } from '../helpers/app.js'
import { makeUser, type TestUser } from '../helpers/factories.js'
import { freezableRelay, timed } from '../helpers/outage.js'
import { createPgSchema, type PgSchema, testDatabaseUrl } from '../helpers/pg-schema.js'

// PostgreSQL only (SQLite is in the process: it cannot hang). The service reaches the database through a
// relay that can stop passing bytes on, as a server that hangs does: the session routes answer 503 with the
// documented body within their bounded wait, change nothing, and work again once the database answers.

const NOT_READY = { error: 'La base de datos no responde' }

describe.skipIf(dialect !== 'postgres')('sessions while PostgreSQL hangs', () => {
  let schema: PgSchema
  let relay: Awaited<ReturnType<typeof freezableRelay>>
  let handle: DatabaseHandle
  let app: FastifyInstance
  let user: TestUser
  let pair: { token: string; refreshToken: string }

  beforeAll(async () => {
    const url = new URL(testDatabaseUrl())
    schema = await createPgSchema(url.toString(), 'test_sessions_outage')
    relay = await freezableRelay(Number(url.port || 5432), url.hostname)
    url.port = String(relay.port)
    handle = connectDatabase(url.toString(), { schema: schema.name, poolSize: 4, timeouts: { connectTimeoutMs: 1000, statementTimeoutMs: 1000 } })
    app = await buildApp(testConfig({ AUTH_RATE_LIMIT_MAX: '100000' }), { database: handle, logger: false })
    await app.ready()
    user = await makeUser(app)
    pair = (await app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })).json()
  })

  afterAll(async () => {
    relay?.freeze(false)
    await app?.close()
    await handle?.db.destroy()
    await relay?.close()
    await schema?.drop()
  })

  it('refresh, logout and reset answer 503 with the documented body, within their bounded wait; nothing changes', async () => {
    relay.freeze(true)
    const calls = {
      refresh: () => app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: pair.refreshToken } }),
      logout: () => app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${pair.token}` } }),
      reset: () => app.inject({ method: 'POST', url: '/auth/password-reset', payload: { email: user.email } }),
    }
    for (const [name, call] of Object.entries(calls)) {
      // Bounded: the connect and statement timeouts are 1 s each; `timed` fails the test past 5 s.
      const { value: res } = await timed(call)
      // The session was never checked before: logout's auth check reads the database too.
      expect({ name, status: res.statusCode, body: res.json() }).toEqual({ name, status: 503, body: NOT_READY })
    }
    relay.freeze(false)
    // Back: nothing was spent or ended, and the pair works. Asked again while the database is not back (503);
    // the first other answer must be the new pair.
    let answer!: Awaited<ReturnType<typeof calls.refresh>>
    const refreshed = async () => (answer = await calls.refresh()).statusCode
    await expect.poll(refreshed, { timeout: 10_000, interval: 100 }).not.toBe(503)
    expect(answer.statusCode).toBe(200)
    const me = await app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${answer.json().token}` } })
    expect(me.statusCode).toBe(200)
    const sessions = await app.db.selectFrom('sessions').select(['ended_at']).where('user_id', '=', user.id).execute()
    expect(sessions).toEqual([{ ended_at: null }])
  })
})
