import type { Config } from './index.js'
import type { Reader } from './read.js'

/** E-mail (src/modules/outbox/mail): SMTP when `smtpUrl` is set, else .eml files under DATA_DIR/mail. */
export interface MailConfig {
  /** smtp://[user:pass@]host:port (plain or STARTTLS) or smtps://…; null writes .eml files instead. */
  readonly smtpUrl: string | null
  readonly from: string
  /** Who gets the admins' e-mails (new order, low stock); empty: nobody. */
  readonly adminNotify: readonly string[]
  /** Bounded waits toward the SMTP server: connecting, its greeting, and silence on the socket. */
  readonly timeoutMs: number
}

const EMAIL = /^[^\s@<>,]+@[^\s@<>,]+\.[^\s@<>,]+$/

export function readMail(read: Reader, { publicUrl }: Pick<Config, 'publicUrl'>): { mail: MailConfig } {
  const smtpUrl = read.string('SMTP_URL') ?? null
  if (smtpUrl !== null) {
    let parsed: URL | undefined
    try {
      parsed = new URL(smtpUrl)
    } catch {
      parsed = undefined
    }
    // The URL itself may hold a password: never echoed.
    if (!parsed || !['smtp:', 'smtps:'].includes(parsed.protocol) || parsed.hostname === '') {
      read.problem('SMTP_URL must be smtp://[user:pass@]host:port or smtps://[user:pass@]host:port')
    }
  }
  let host = 'localhost'
  try {
    host = new URL(publicUrl).hostname || host
  } catch {
    // PUBLIC_URL's own problem is reported by its section.
  }
  const given = read.string('MAIL_FROM')
  // The default takes PUBLIC_URL's host as it is (localhost in development); a given one must be an address.
  const from = given ?? `no-reply@${host}`
  const address = /<([^<>]+)>\s*$/.exec(from)?.[1] ?? from
  if (given !== undefined && !/^[^\s@<>,]+@[^\s@<>,]+$/.test(address.trim()))
    read.problem(`MAIL_FROM must be an e-mail address, optionally with a name: Tienda <no-reply@example.com> (got "${from}")`)
  const adminNotify = (read.string('ADMIN_NOTIFY_EMAIL') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  const bad = adminNotify.filter((entry) => !EMAIL.test(entry))
  if (bad.length > 0) read.problem(`ADMIN_NOTIFY_EMAIL must be e-mail addresses separated by commas (got "${bad.join(', ')}")`)
  return {
    mail: Object.freeze({
      smtpUrl,
      from,
      adminNotify: Object.freeze(adminNotify.map((entry) => entry.toLowerCase())),
      timeoutMs: read.integer('SMTP_TIMEOUT_MS', 10_000, 100, 300_000),
    }),
  }
}
