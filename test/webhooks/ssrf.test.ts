import { beforeEach, describe, expect, it } from 'vitest'
import { checkWebhookHost, isPublicAddress } from '../../src/modules/webhooks/webhook-address.js'
import { ConfigError } from '../../src/config.js'
import { createWebhook } from '../../src/modules/webhooks/webhooks.service.js'
import { systemSource } from '../../src/modules/staff/audit-log.js'
import { AppError, messages } from '../../src/shared/errors.js'
import { createTestApp, testConfig, useTestApp } from '../helpers/app.js'
import { bearer, makeUser } from '../helpers/factories.js'

// WEBHOOKS_ALLOW_PRIVATE is off, as in production: only public addresses.
const t = useTestApp({}, { outbox: { enabled: false } })

beforeEach(async () => {
  await t.app.db.deleteFrom('webhooks').execute()
})

const post = (url: string) => t.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(t.admin), payload: { url, events: ['order.created'] } })
const rows = () => t.app.db.selectFrom('webhooks').selectAll().execute()

describe('a webhook URL must reach a public address', () => {
  it.each([
    ['loopback', 'http://127.0.0.1/hook'],
    ['loopback, elsewhere in 127/8', 'http://127.8.9.10:8080/hook'],
    ['loopback written as one number', 'http://2130706433/hook'],
    ['loopback written in hex', 'http://0x7f.0.0.1/hook'],
    ['private 10/8', 'http://10.1.2.3/hook'],
    ['private 172.16/12', 'https://172.16.5.4/hook'],
    ['private 192.168/16', 'http://192.168.1.1/hook'],
    ['link-local (cloud metadata)', 'http://169.254.169.254/latest/meta-data/'],
    ['carrier-grade NAT 100.64/10', 'http://100.64.0.1/hook'],
    ['unspecified 0.0.0.0', 'http://0.0.0.0:3000/hook'],
    ['multicast 224/4', 'http://224.0.0.1/hook'],
    ['broadcast', 'http://255.255.255.255/hook'],
    ['IPv6 loopback', 'http://[::1]/hook'],
    ['IPv6 unspecified', 'http://[::]/hook'],
    ['IPv6 unique-local fc00::/7', 'http://[fc00::1]/hook'],
    ['IPv6 unique-local fd00::/8', 'http://[fd12:3456::1]/hook'],
    ['IPv6 link-local', 'http://[fe80::1]/hook'],
    ['IPv6 multicast', 'http://[ff02::1]/hook'],
    ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/hook'],
    ['IPv4-mapped IPv6 private', 'http://[::ffff:10.0.0.1]/hook'],
    ['a name that resolves to loopback', 'http://localhost:3000/hook'],
  ])('refuses %s (%s) with 422 and writes nothing', async (_label, url) => {
    const res = await post(url)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: messages.webhookUrlNotAllowed })
    expect(await rows()).toEqual([])
  })

  it('accepts a public address', async () => {
    const res = await post('https://93.184.215.14/hook')
    expect(res.statusCode).toBe(201)
    expect(await rows()).toHaveLength(1)
  })

  it('refuses a name that does not exist with its own 422', async () => {
    const res = await post('https://no-such-host.invalid/hook')
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: messages.webhookHostNotFound })
    expect(await rows()).toEqual([])
  })

  it('applies to a changed URL too, and changes nothing', async () => {
    const created = (await post('https://93.184.215.14/hook')).json()
    const res = await t.app.inject({ method: 'PATCH', url: `/webhooks/${created.id}`, headers: bearer(t.admin), payload: { url: 'http://169.254.169.254/' } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: messages.webhookUrlNotAllowed })
    expect((await rows())[0]!.url).toBe('https://93.184.215.14/hook')
  })

  it('lets private addresses through with WEBHOOKS_ALLOW_PRIVATE=true', async () => {
    const allowed = await createTestApp({ WEBHOOKS_ALLOW_PRIVATE: 'true' }, { outbox: { enabled: false } })
    try {
      const owner = await makeUser(allowed.app, 'admin')
      for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://[::1]/hook', 'http://10.0.0.7/hook', 'http://intranet.invalid/hook']) {
        const res = await allowed.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(owner), payload: { url, events: ['order.paid'] } })
        expect(res.statusCode, url).toBe(201)
      }
    } finally {
      await allowed.close()
    }
  })
})

describe('checking a host', () => {
  it.each([
    ['8.8.8.8', true],
    ['93.184.215.14', true],
    ['2606:4700:4700::1111', true],
    ['127.0.0.1', false],
    ['10.255.255.255', false],
    ['172.31.0.1', false],
    ['172.32.0.1', true],
    ['100.64.0.0', false],
    ['100.127.255.255', false],
    ['100.128.0.1', true],
    ['169.254.0.1', false],
    ['0.0.0.0', false],
    ['239.255.255.250', false],
    ['240.0.0.1', false],
    ['::', false],
    ['::1', false],
    ['fc00::', false],
    ['fdff:ffff::1', false],
    ['fe80::abcd', false],
    ['ff05::2', false],
    ['::ffff:192.168.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['not an address', false],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected)
  })

  it('refuses a name when any of its addresses is not public', async () => {
    const lookup = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]
    const check = await checkWebhookHost(new URL('https://mixed.example.com/'), { allowPrivate: false, lookup })
    expect(check).toEqual({ ok: false, reason: 'not-allowed', detail: 'mixed.example.com resolves to 10.0.0.1, not a public address' })
  })

  it('answers the first address of a public name, the one to connect to', async () => {
    const lookup = async () => [
      { address: '2606:4700:4700::1111', family: 6 },
      { address: '93.184.215.14', family: 4 },
    ]
    expect(await checkWebhookHost(new URL('https://ok.example.com/'), { allowPrivate: false, lookup })).toEqual({
      ok: true,
      address: '2606:4700:4700::1111',
      family: 6,
    })
  })

  it('gives up on a DNS that does not answer, within its bound', async () => {
    const lookup = () => new Promise<never>(() => {})
    const check = await checkWebhookHost(new URL('https://slow.example.com/'), { allowPrivate: false, lookup, timeoutMs: 200 })
    expect(check).toEqual({ ok: false, reason: 'dns-unavailable', detail: 'DNS lookup of slow.example.com failed: ETIMEOUT' })
  })

  it('tells a name that does not exist from a DNS failure', async () => {
    const failing = (code: string) => async () => {
      throw Object.assign(new Error(code), { code })
    }
    expect(await checkWebhookHost(new URL('http://x.example.com'), { allowPrivate: false, lookup: failing('ENOTFOUND') })).toMatchObject({
      ok: false,
      reason: 'not-found',
    })
    expect(await checkWebhookHost(new URL('http://x.example.com'), { allowPrivate: false, lookup: failing('EAI_AGAIN') })).toMatchObject({
      ok: false,
      reason: 'dns-unavailable',
    })
    expect(await checkWebhookHost(new URL('http://x.example.com'), { allowPrivate: false, lookup: async () => [] })).toMatchObject({
      ok: false,
      reason: 'not-found',
    })
  })

  it('answers 503 at creation when the DNS does not answer, and writes nothing', async () => {
    const lookup = async () => {
      throw Object.assign(new Error('temporary failure'), { code: 'EAI_AGAIN' })
    }
    const error = await createWebhook(
      t.app.db,
      { url: 'https://hooks.example.com/', events: ['order.created'] },
      { allowPrivate: false, lookup },
      systemSource('test'),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ statusCode: 503, message: messages.webhookDnsUnavailable })
    expect(await rows()).toEqual([])
  })
})

describe('WEBHOOKS_ALLOW_PRIVATE', () => {
  it('is off by default, and only true or false', () => {
    expect(testConfig().webhooksAllowPrivate).toBe(false)
    expect(testConfig({ WEBHOOKS_ALLOW_PRIVATE: 'true' }).webhooksAllowPrivate).toBe(true)
    expect(testConfig({ WEBHOOKS_ALLOW_PRIVATE: 'false' }).webhooksAllowPrivate).toBe(false)
    const error = (() => {
      try {
        testConfig({ WEBHOOKS_ALLOW_PRIVATE: 'yes' })
      } catch (e) {
        return e
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual(['WEBHOOKS_ALLOW_PRIVATE must be true or false (got "yes")'])
  })
})
