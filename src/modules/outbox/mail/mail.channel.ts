import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { createTransport } from 'nodemailer'
import type { Config } from '../../../config.js'
import type { Deliver, DeliveryOutcome } from '../dispatcher.js'
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

/**
 * The `email` channel: renders the queued e-mail's templates and sends it over SMTP_URL, one connection per message
 * (an attempt that times out closes its own connection, nothing of it is left queued to go out later). Without
 * SMTP_URL, writes it as DATA_DIR/mail/<created>-<id>.eml instead and logs its recipient and subject (never its
 * body: a password reset's link is a credential). The Message-ID is the outbox row's id, the same on every attempt.
 */
export function createMailChannel(config: Config, log: FastifyBaseLogger): Deliver {
  const { mail } = config
  const messageDomain = domainOf(mail.from)
  const context = { currency: config.payments.currency, publicUrl: config.publicUrl }
  const mailDir = join(config.dataDir, 'mail')

  return async (message, signal): Promise<DeliveryOutcome> => {
    const email = message.payload as EmailMessage
    const rendered = renderEmail(email.template, emailView(email, context))
    const fields = {
      from: mail.from,
      to: email.to,
      subject: rendered.subject,
      text: rendered.text,
      html: rendered.html,
      messageId: `<${message.id}@${messageDomain}>`,
      date: new Date(message.createdAt),
    }
    if (mail.smtpUrl === null) {
      const built = await createTransport({ streamTransport: true, buffer: true }).sendMail(fields)
      await mkdir(mailDir, { recursive: true })
      const name = `${message.createdAt.replace(/[:.]/g, '-')}-${message.id}.eml`
      // Written whole or not at all: a crash mid-write leaves a .tmp, and the retry writes the same name again.
      await writeFile(join(mailDir, `${name}.tmp`), built.message as Buffer)
      await rename(join(mailDir, `${name}.tmp`), join(mailDir, name))
      log.info({ to: email.to, subject: rendered.subject, file: join('mail', name) }, 'e-mail written as a file (no SMTP_URL)')
      return { ok: true }
    }
    const transport = createTransport(smtpOptions(mail.smtpUrl, mail.timeoutMs))
    const abort = () => transport.close()
    signal.addEventListener('abort', abort, { once: true })
    try {
      const info = await transport.sendMail(fields)
      log.debug({ to: email.to, subject: rendered.subject }, 'e-mail sent')
      const code = /^(\d{3})/.exec(String(info.response ?? ''))?.[1]
      return { ok: true, ...(code ? { statusCode: Number(code) } : {}) }
    } catch (error) {
      const failure = error as Error & { code?: unknown; responseCode?: unknown }
      return {
        ok: false,
        error: failure.message,
        ...(typeof failure.responseCode === 'number' ? { statusCode: failure.responseCode } : {}),
        ...(isPermanent(failure) ? { permanent: true } : {}),
      }
    } finally {
      signal.removeEventListener('abort', abort)
      transport.close()
    }
  }
}
