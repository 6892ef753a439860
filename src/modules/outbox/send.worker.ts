// The sending thread (send-thread.ts): e-mails through the mail sender, webhook deliveries through sendWebhook.
import { parentPort, workerData } from 'node:worker_threads'
import { sendWebhook } from '../webhooks/webhook-delivery.js'
import { createMailSender } from './mail/mail.sender.js'
import type { FromWorker, SendJob, SendResult, SendThreadSettings, ToWorker } from './send-thread.js'

const settings = workerData as SendThreadSettings
const mail = createMailSender(settings.mail)
const running = new Map<number, AbortController>()

async function run(job: SendJob, signal: AbortSignal): Promise<SendResult> {
  if (job.kind === 'email') return mail.send(job.mail, signal)
  return { outcome: await sendWebhook(job.target, job.message, { ...job.options, signal }) }
}

parentPort?.on('message', (message: ToWorker) => {
  if (message.type === 'abort') {
    running.get(message.seq)?.abort()
    return
  }
  const controller = new AbortController()
  running.set(message.seq, controller)
  void run(message.job, controller.signal)
    .catch((error: unknown): SendResult => ({ outcome: { ok: false, error: error instanceof Error ? error.message : String(error) } }))
    .then((result) => {
      running.delete(message.seq)
      parentPort?.postMessage({ seq: message.seq, result } satisfies FromWorker)
    })
})
