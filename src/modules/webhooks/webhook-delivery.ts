import { createHmac } from 'node:crypto'
import type { LookupFunction } from 'node:net'
import http from 'node:http'
import https from 'node:https'
import { type AddressLookup, checkWebhookHost, DNS_TIMEOUT_MS } from './webhook-address.js'

/** What one attempt came to; the outbox dispatcher retries a failure unless it is permanent. */
export type DeliveryOutcome = { ok: true; statusCode?: number } | { ok: false; error: string; statusCode?: number; permanent?: boolean }

export interface SendOptions {
  allowPrivate: boolean
  /** The whole attempt: DNS, connection, request and answer. */
  timeoutMs?: number
  /** Bytes of the receiver's answer read at most; the rest is dropped with the connection. */
  maxResponseBytes?: number
  lookup?: AddressLookup
  /** Aborts the attempt (the dispatcher's own bound, or its shutdown). */
  signal?: AbortSignal
}

export const DELIVERY_TIMEOUT_MS = 10_000
export const MAX_RESPONSE_BYTES = 64 * 1024
/** Characters of a failed answer's body kept in `lastError`, for the admin to see why. */
const ERROR_BODY_CHARACTERS = 200
const USER_AGENT = 'shop-api-webhooks/1'

/**
 * Standard Webhooks' signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the bytes the
 * secret's base64 (after `whsec_`) stands for.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`
}

/** A lookup that answers the one address already checked, whatever name it is asked for. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }])
    else callback(null, address, family)
  }) as unknown as LookupFunction
}

function printable(text: string): string {
  return text.replace(/[\u0000-\u001F\u007F-\u009F]+/g, ' ').trim()
}

/**
 * One attempt to POST `body` to `url`, signed with `secret`: the host is resolved and checked (SSRF) first, and
 * the connection goes to that checked address (the name is never resolved again, so it cannot be rebound in
 * between); TLS still verifies the certificate against the name. Redirects are not followed. Bounded in time
 * (timeoutMs for all of it) and in memory (of a failed answer, maxResponseBytes read at most; of a 2xx, nothing).
 * Any 2xx is delivered.
 */
export async function sendWebhook(
  target: { url: string; secret: string },
  message: { id: string; body: string },
  options: SendOptions,
): Promise<DeliveryOutcome> {
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS
  const maxBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, timeoutMs)
  const onOuterAbort = () => controller.abort()
  options.signal?.addEventListener('abort', onOuterAbort, { once: true })
  if (options.signal?.aborted) controller.abort()
  try {
    let url: URL
    try {
      url = new URL(target.url)
    } catch {
      return { ok: false, error: 'the webhook URL is not valid', permanent: true }
    }
    const host = await checkWebhookHost(url, {
      allowPrivate: options.allowPrivate,
      timeoutMs: Math.min(DNS_TIMEOUT_MS, timeoutMs),
      signal: controller.signal,
      ...(options.lookup ? { lookup: options.lookup } : {}),
    })
    if (!host.ok) {
      if (controller.signal.aborted) return { ok: false, error: timedOut ? `no answer within ${timeoutMs} ms` : 'aborted' }
      return { ok: false, error: host.reason === 'not-allowed' ? `refused: ${host.detail}` : host.detail }
    }
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(message.body)),
      'user-agent': USER_AGENT,
      'webhook-id': message.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(target.secret, message.id, timestamp, message.body),
    }
    const client = url.protocol === 'https:' ? https : http
    return await new Promise<DeliveryOutcome>((resolve) => {
      let settled = false
      const settle = (outcome: DeliveryOutcome) => {
        if (settled) return
        settled = true
        request.destroy()
        resolve(outcome)
      }
      // A fresh connection per attempt (agent: false): it is made to the address checked above.
      const request = client.request(url, { method: 'POST', headers, agent: false, lookup: pinnedLookup(host.address, host.family), signal: controller.signal })
      request.on('error', (error: Error & { code?: string }) => {
        if (controller.signal.aborted) settle({ ok: false, error: timedOut ? `no answer within ${timeoutMs} ms` : 'aborted' })
        else settle({ ok: false, error: printable(error.message || error.code || 'connection failed') })
      })
      request.on('response', (response) => {
        const status = response.statusCode ?? 0
        // The status is the answer: a 2xx body is not read at all (a receiver still streaming one costs nothing).
        if (status >= 200 && status < 300) return settle({ ok: true, statusCode: status })
        const chunks: Buffer[] = []
        let read = 0
        const finish = () => {
          const text = printable(Buffer.concat(chunks).toString('utf8')).slice(0, ERROR_BODY_CHARACTERS)
          settle({ ok: false, statusCode: status, error: text === '' ? `HTTP ${status}` : `HTTP ${status}: ${text}` })
        }
        response.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (chunks.reduce((sum, c) => sum + c.length, 0) < ERROR_BODY_CHARACTERS * 4) chunks.push(chunk)
          // Enough for the error: the rest of a huge answer is not read.
          if (read >= maxBytes) finish()
        })
        response.on('end', finish)
        // The answer's status arrived: a body cut short by the time bound or the peer does not change it.
        response.on('error', finish)
        response.on('aborted', finish)
        controller.signal.addEventListener('abort', finish, { once: true })
      })
      request.end(message.body)
    })
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onOuterAbort)
  }
}
