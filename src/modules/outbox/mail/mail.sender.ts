import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createTransport } from 'nodemailer'
import type { DeliveryOutcome } from '../channels.js'
import type { EmailMessage } from '../outbox.js'
import { renderEmail } from './templates.js'
import { emailView } from './views.js'

/** The SMTP connection of SMTP_URL, every wait bounded (connecting, the server's greeting, silence on the socket). */
function smtpOptions(smtpUrl: string, timeoutMs: number) {
  const url = new URL(smtpUrl)
  const secure = url.protocol === 'smtps:'
  return {
    host: url.hostname,
    port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
    secure,
    ...(url.username !== '' ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
  }
}

/** Errors a new attempt cannot fix: the server refused the recipient or the message itself (5xx). */
function isPermanent(error: { code?: unknown; responseCode?: unknown }): boolean {
  return typeof error.responseCode === 'number' && error.responseCode >= 500 && (error.code === 'EENVELOPE' || error.code === 'EMESSAGE')
}

function domainOf(address: string): string {
  const match = /@([^\s@<>]+)>?\s*$/.exec(address)
  return match?.[1] ?? 'localhost'
}

/** What the mail sender needs, plain data (it is handed to the sending thread, src/modules/outbox/send-thread.ts). */
export interface MailSettings {
  smtpUrl: string | null
  from: string
  timeoutMs: number
  /** .eml files go under <dataDir>/mail when smtpUrl is null. */
  dataDir: string
  currency: string
  publicUrl: string
}

/** One queued e-mail as the sender sees it: the outbox row's id (the Message-ID), payload and creation time. */
export interface MailJob {
  id: string
  payload: unknown
  createdAt: string
}

/** An attempt's outcome, and what the caller logs of it (recipient and subject; never the body). */
export interface MailResult {
  outcome: DeliveryOutcome
  sent?: { to: string; subject: string; file?: string }
}

/**
 * Renders a queued e-mail's templates and sends it over SMTP_URL through a small pool of connections (a handful of
 * messages per connection, closed after a while idle). An attempt that is aborted (its timeout) closes the whole
 * pool, so nothing of it stays queued to go out later; the other messages on it fail and are retried (at least
 * once). Without SMTP_URL, writes each message as DATA_DIR/mail/<created>-<id>.eml instead. The Message-ID is the
 * outbox row's id, the same on every attempt.
 */
export function createMailSender(settings: MailSettings): { send: (job: MailJob, signal: AbortSignal) => Promise<MailResult>; close: () => void } {
  const messageDomain = domainOf(settings.from)
  const context = { currency: settings.currency, publicUrl: settings.publicUrl }
  const mailDir = join(settings.dataDir, 'mail')
  let pool: ReturnType<typeof createPool> | undefined
  const createPool = (smtpUrl: string) =>
    createTransport({ ...smtpOptions(smtpUrl, settings.timeoutMs), pool: true, maxConnections: 4, maxMessages: 50, idleTimeout: 5000 })
  // Without SMTP_URL: one transport that only builds messages, and the directory made once (again if it is removed).
  let builder: ReturnType<typeof createBuilder> | undefined
  const createBuilder = () => createTransport({ streamTransport: true, buffer: true })
  let mailDirMade = false
  const writeMessage = async (name: string, message: Buffer): Promise<void> => {
    const temporary = join(mailDir, `${name}.tmp`)
    if (!mailDirMade) {
      await mkdir(mailDir, { recursive: true })
      mailDirMade = true
    }
    // Written whole or not at all: a crash mid-write leaves a .tmp, and the retry writes the same name again.
    try {
      await writeFile(temporary, message)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      await mkdir(mailDir, { recursive: true })
      await writeFile(temporary, message)
    }
    await rename(temporary, join(mailDir, name))
  }

  const send = async (job: MailJob, signal: AbortSignal): Promise<MailResult> => {
    const email = job.payload as EmailMessage
    const rendered = renderEmail(email.template, emailView(email, context))
    const fields = {
      from: settings.from,
      to: email.to,
      subject: rendered.subject,
      text: rendered.text,
      html: rendered.html,
      messageId: `<${job.id}@${messageDomain}>`,
      date: new Date(job.createdAt),
    }
    if (settings.smtpUrl === null) {
      builder ??= createBuilder()
      const built = await builder.sendMail(fields)
      const name = `${job.createdAt.replace(/[:.]/g, '-')}-${job.id}.eml`
      await writeMessage(name, built.message as Buffer)
      return { outcome: { ok: true }, sent: { to: email.to, subject: rendered.subject, file: join('mail', name) } }
    }
    pool ??= createPool(settings.smtpUrl)
    const transport = pool
    const abort = () => {
      if (pool === transport) pool = undefined
      transport.close()
    }
    signal.addEventListener('abort', abort, { once: true })
    try {
      const info = await transport.sendMail(fields)
      const code = /^(\d{3})/.exec(String(info.response ?? ''))?.[1]
      return { outcome: { ok: true, ...(code ? { statusCode: Number(code) } : {}) }, sent: { to: email.to, subject: rendered.subject } }
    } catch (error) {
      const failure = error as Error & { code?: unknown; responseCode?: unknown }
      return {
        outcome: {
          ok: false,
          error: failure.message,
          ...(typeof failure.responseCode === 'number' ? { statusCode: failure.responseCode } : {}),
          ...(isPermanent(failure) ? { permanent: true } : {}),
        },
      }
    } finally {
      signal.removeEventListener('abort', abort)
    }
  }
  return {
    send,
    close: () => {
      pool?.close()
      pool = undefined
    },
  }
}
