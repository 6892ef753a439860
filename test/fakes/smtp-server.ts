import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer, type SMTPServerAddress } from 'smtp-server'

export interface ReceivedMail {
  from: string
  to: string[]
  parsed: ParsedMail
}

export interface SmtpFake {
  port: number
  /** SMTP_URL for the service. */
  url: string
  received: ReceivedMail[]
  /** Called on each MAIL FROM; a thrown error (with responseCode) is the server's answer. */
  onMailFrom: ((address: SMTPServerAddress) => void | Promise<void>) | undefined
  /** Called on each RCPT TO. */
  onRcptTo: ((address: SMTPServerAddress) => void | Promise<void>) | undefined
  /** Milliseconds to wait before answering the end of DATA (a slow server). */
  dataDelayMs: number
  /** Stops listening (connections are refused) until `start` again, on the same port. */
  stop: () => Promise<void>
  start: () => Promise<void>
  close: () => Promise<void>
  /** The messages received, by subject. */
  subjects: () => string[]
}

/** A real SMTP server on 127.0.0.1 (port 0 the first time), no TLS, no authentication; it parses what it gets. */
export async function startSmtpFake(): Promise<SmtpFake> {
  const fake: SmtpFake = {
    port: 0,
    url: '',
    received: [],
    onMailFrom: undefined,
    onRcptTo: undefined,
    dataDelayMs: 0,
    stop: async () => {},
    start: async () => {},
    close: async () => {},
    subjects: () => fake.received.map((mail) => mail.parsed.subject ?? ''),
  }
  let server: SMTPServer | undefined
  const make = () =>
    new SMTPServer({
      disabledCommands: ['STARTTLS', 'AUTH'],
      authOptional: true,
      // No reverse DNS of the client: without a resolver that answers, each connection would wait seconds for it.
      disableReverseLookup: true,
      logger: false,
      onMailFrom(address, _session, callback) {
        Promise.resolve()
          .then(() => fake.onMailFrom?.(address))
          .then(
            () => callback(),
            (error: Error) => callback(error),
          )
      },
      onRcptTo(address, _session, callback) {
        Promise.resolve()
          .then(() => fake.onRcptTo?.(address))
          .then(
            () => callback(),
            (error: Error) => callback(error),
          )
      },
      onData(stream, session, callback) {
        simpleParser(stream).then(
          (parsed) => {
            const done = () => {
              fake.received.push({
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                to: session.envelope.rcptTo.map((r) => r.address),
                parsed,
              })
              callback()
            }
            if (fake.dataDelayMs > 0) setTimeout(done, fake.dataDelayMs)
            else done()
          },
          (error: Error) => callback(error),
        )
      },
    })
  fake.start = async () => {
    server = make()
    server.on('error', () => {})
    const current = server
    await new Promise<void>((resolve, reject) => {
      current.server.once('error', reject)
      current.listen(fake.port, '127.0.0.1', () => resolve())
    })
    fake.port = (current.server.address() as AddressInfo).port
    fake.url = `smtp://127.0.0.1:${fake.port}`
  }
  fake.stop = async () => {
    const current = server
    server = undefined
    if (current) await new Promise<void>((resolve) => current.close(() => resolve()))
  }
  fake.close = fake.stop
  await fake.start()
  return fake
}

/** An SMTP error answer (what onMailFrom/onRcptTo throw). */
export function smtpError(responseCode: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode })
}
