import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import type { FastifyInstance } from 'fastify'
import { openTestDatabase, testConfig } from '../helpers/app.js'
import { type StripeFake, startStripeFake } from '../fakes/stripe-fake.js'
import { deliver, intentEvent, intentOf, pay, placeOrder, stripeEnv } from './helpers.js'

// What the webhook writes to the log: the event's id and type (and the order and outcome), never its payload.

let fake: StripeFake
let app: FastifyInstance
let drop: () => Promise<void>
const lines: Array<Record<string, unknown>> = []

beforeAll(async () => {
  fake = await startStripeFake()
  const database = await openTestDatabase()
  drop = database.drop
  const stream = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }
  app = await buildApp(testConfig(stripeEnv(fake)), { database: database.handle, logger: { level: 'info', stream }, catalogCache: false })
  await app.ready()
})
afterAll(async () => {
  await app.close()
  await drop()
  await fake.close()
})

describe('the webhook’s log', () => {
  it('names the event id and type, never the card details of the payload; a mismatch is logged at error', async () => {
    const order = await placeOrder(app)
    await pay(app, order)
    const marker = 'card-detail-4242-never-logged'
    const intent = { ...fake.succeed(await intentOf(app, order.id), 1), payment_method_details: { card: { last4: marker } }, receipt_email: marker }
    const event = intentEvent('payment_intent.succeeded', intent)
    expect((await deliver(app, event)).statusCode).toBe(200)
    const text = lines.map((l) => JSON.stringify(l)).join('\n')
    expect(text).not.toContain(marker)
    expect(text).not.toContain(intent.client_secret)
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, eventId: event.id, orderId: order.id }))
    expect(lines).toContainEqual(expect.objectContaining({ level: 30, eventId: event.id, type: 'payment_intent.succeeded', outcome: 'mismatch' }))
  })
})
