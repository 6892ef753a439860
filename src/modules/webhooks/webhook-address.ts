import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { messages } from '../../shared/errors.js'
import { ValidationError } from '../../shared/validation.js'

/** A name's addresses, as the system resolver gives them (/etc/hosts included); tests pass their own. */
export type AddressLookup = (hostname: string) => Promise<{ address: string; family: number }[]>

const systemLookup: AddressLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

/** How long a webhook host's name may take to resolve, at creation and at each delivery. */
export const DNS_TIMEOUT_MS = 3000

/**
 * Whether the shop may open a connection to `address`: public unicast only. ipaddr.js names every special
 * range (loopback, private, link-local, unique-local, carrier-grade NAT, unspecified, multicast, broadcast,
 * reserved, documentation, 6to4, Teredo, NAT64…); all of them are refused, and an IPv4-mapped IPv6 address
 * (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false
  return ipaddr.process(address).range() === 'unicast'
}

/**
 * Reads a webhook URL: absolute http or https, with a host and no credentials; anything else is a 422.
 * The address rules are checked apart (checkWebhookHost), since they may need the network.
 */
export function parseWebhookUrl(raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ValidationError(messages.webhookUrlInvalid, 'url')
  }
  // The URL parser drops surrounding blanks silently; the stored URL is the one the admin sent, so it must be exact.
  if (raw.trim() !== raw || /\s/.test(raw)) throw new ValidationError(messages.webhookUrlInvalid, 'url')
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') throw new ValidationError(messages.webhookUrlInvalid, 'url')
  if (url.username !== '' || url.password !== '') throw new ValidationError(messages.webhookUrlCredentials, 'url')
  return url
}

/** The URL's host without the brackets of an IPv6 literal. */
function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
}

export type HostCheck = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: 'not-allowed' | 'not-found' | 'dns-unavailable'; detail: string }

export interface HostCheckOptions {
  allowPrivate: boolean
  lookup?: AddressLookup
  timeoutMs?: number
  signal?: AbortSignal
}

/** `promise`, or a rejection after `ms` or when `signal` aborts (the lookup itself cannot be cancelled; it is left to finish). */
function bounded<T>(promise: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => finish(() => reject(Object.assign(new Error('aborted'), { code: 'ABORTED' })))
    const timer = setTimeout(() => finish(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEOUT' }))), ms)
    let done = false
    function finish(settle: () => void) {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      settle()
    }
    if (signal?.aborted) return onAbort()
    signal?.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    )
  })
}

/**
 * Resolves the URL's host and says which address to connect to. Unless private addresses are allowed, every
 * address the name resolves to must be public (a name that answers one public and one private address is
 * refused: which one a client picks is not ours to guess). The caller connects to the address returned, never
 * to the name again, so the name cannot resolve elsewhere between the check and the connection.
 */
export async function checkWebhookHost(url: URL, options: HostCheckOptions): Promise<HostCheck> {
  const host = hostOf(url)
  const literal = isIP(host)
  if (literal !== 0) {
    if (!options.allowPrivate && !isPublicAddress(host)) return { ok: false, reason: 'not-allowed', detail: `${host} is not a public address` }
    return { ok: true, address: host, family: literal as 4 | 6 }
  }
  let addresses: { address: string; family: number }[]
  try {
    addresses = await bounded((options.lookup ?? systemLookup)(host), options.timeoutMs ?? DNS_TIMEOUT_MS, options.signal)
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'ERROR'
    const reason = code === 'ENOTFOUND' || code === 'ENODATA' ? 'not-found' : 'dns-unavailable'
    return { ok: false, reason, detail: `DNS lookup of ${host} failed: ${code}` }
  }
  const first = addresses[0]
  if (!first) return { ok: false, reason: 'not-found', detail: `DNS lookup of ${host} failed: no address` }
  if (!options.allowPrivate) {
    const refused = addresses.find((entry) => !isPublicAddress(entry.address))
    if (refused) return { ok: false, reason: 'not-allowed', detail: `${host} resolves to ${refused.address}, not a public address` }
  }
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 }
}
