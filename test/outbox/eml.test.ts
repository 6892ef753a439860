import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { simpleParser } from 'mailparser'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { enqueueEmail } from '../../src/modules/outbox/outbox.js'
import { openTestDatabase, testConfig } from '../helpers/app.js'

// Without SMTP_URL (development): each e-mail is an .eml file under DATA_DIR/mail, and a log line that names its
// recipient and subject, never its body (a password reset's link is a credential).

let app: FastifyInstance
let dataDir: string
let drop: () => Promise<void>
const logLines: string[] = []

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'shop-eml-'))
  const database = await openTestDatabase()
  drop = database.drop
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString())
      done()
    },
  })
  app = await buildApp(testConfig({ LOG_LEVEL: 'info', MAIL_FROM: 'Tienda <tienda@shop.test>' }, dataDir), {
    database: database.handle,
    logger: { level: 'info', stream },
  })
  await app.ready()
})
afterAll(async () => {
  await app.close()
  await drop()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('e-mail without SMTP_URL', () => {
  it('writes each message as one .eml file under DATA_DIR/mail and logs its recipient and subject only', async () => {
    const link = 'https://shop.test/reset?token=SECRET-TOKEN-123'
    await app.db.transaction().execute((trx) => enqueueEmail(trx, { template: 'password-reset', to: 'ana@shop.test', data: { name: 'Ana', link } }))
    await app.outbox.drain()
    const files = readdirSync(join(dataDir, 'mail'))
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z-[0-9a-f-]{36}\.eml$/)
    const parsed = await simpleParser(readFileSync(join(dataDir, 'mail', files[0] ?? '')))
    expect(parsed.subject).toBe('Restablece tu contraseña')
    expect(parsed.from?.value).toEqual([{ address: 'tienda@shop.test', name: 'Tienda' }])
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.text : '').toBe('ana@shop.test')
    expect(parsed.text).toContain(link)
    expect(parsed.html).toContain(`href="${link}"`)

    const row = await app.db.selectFrom('outbox').selectAll().executeTakeFirstOrThrow()
    expect(row).toMatchObject({ status: 'delivered', attempts: 1 })
    expect(files[0]).toContain(row.id)

    const line = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'e-mail written as a file (no SMTP_URL)')
    expect(line).toMatchObject({ to: 'ana@shop.test', subject: 'Restablece tu contraseña', file: join('mail', files[0] ?? '') })
    expect(logLines.join('')).not.toContain('SECRET-TOKEN-123')
  })

  it('makes DATA_DIR/mail again when it was removed after the first message', async () => {
    const send = async (to: string) => {
      await app.db.transaction().execute((trx) => enqueueEmail(trx, { template: 'password-reset', to, data: { name: 'Ana', link: 'https://shop.test/r' } }))
      await app.outbox.drain()
    }
    await send('bea@shop.test')
    expect(readdirSync(join(dataDir, 'mail')).length).toBeGreaterThan(0)
    rmSync(join(dataDir, 'mail'), { recursive: true })
    await send('carla@shop.test')
    const files = readdirSync(join(dataDir, 'mail'))
    expect(files).toHaveLength(1)
    const parsed = await simpleParser(readFileSync(join(dataDir, 'mail', files[0] ?? '')))
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.text : '').toBe('carla@shop.test')
    // Every message, the one written after the folder was removed included, delivered at its first attempt.
    const rows = await app.db.selectFrom('outbox').select(['status', 'attempts']).execute()
    expect(rows).toHaveLength(3)
    expect(rows.every((row) => row.status === 'delivered' && row.attempts === 1)).toBe(true)
  })
})
