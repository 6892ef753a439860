import type { Worker } from 'node:worker_threads'
import { startWorker } from '../../shared/worker-thread.js'
import type { DeliveryOutcome } from './channels.js'
import type { MailJob, MailResult, MailSettings } from './mail/mail.sender.js'

/** What the sending thread does: render and send one e-mail, or POST one signed webhook delivery. */
export type SendJob =
  | { kind: 'email'; mail: MailJob }
  | {
      kind: 'webhook'
      target: { url: string; secret: string }
      message: { id: string; body: string }
      options: { allowPrivate: boolean; timeoutMs?: number; maxResponseBytes?: number }
    }

/** The thread's answer to a job: the attempt's outcome, and for an e-mail what to log of it. */
export type SendResult = MailResult

/** Messages between the threads. */
export type ToWorker = { type: 'job'; seq: number; job: SendJob } | { type: 'abort'; seq: number }
export type FromWorker = { seq: number; result: SendResult }

export interface SendThreadSettings {
  mail: MailSettings
}

export interface SendThread {
  /** Runs the job on the thread; `signal` aborting there aborts it (its answer then comes from the caller's own bound). */
  run(job: SendJob, signal: AbortSignal): Promise<SendResult>
  /** Stops the thread; jobs still running fail (the dispatcher has already waited for them, within its bound). */
  close(): Promise<void>
}

/**
 * Sending e-mails and webhook deliveries is CPU work (composing MIME, TLS, HTTP), so it runs on a thread of its own
 * and the requests' event loop only claims rows and records outcomes. The thread starts with the first job, does
 * not keep the process alive, and is started again if it ever dies (the jobs it had fail and are retried).
 */
export function createSendThread(settings: SendThreadSettings): SendThread {
  let worker: Worker | undefined
  let nextSeq = 0
  const waiting = new Map<number, (result: SendResult) => void>()

  const failAll = (error: string) => {
    for (const [seq, resolve] of waiting) {
      waiting.delete(seq)
      resolve({ outcome: { ok: false, error } })
    }
  }

  const start = (): Worker => {
    const started = startWorker(import.meta.url, 'send.worker', settings)
    started.unref()
    started.on('message', (message: FromWorker) => {
      const resolve = waiting.get(message.seq)
      waiting.delete(message.seq)
      resolve?.(message.result)
    })
    const stopped = (why: string) => {
      if (worker === started) worker = undefined
      failAll(why)
    }
    started.on('error', (error) => stopped(`the sending thread failed: ${error.message}`))
    started.on('exit', (code) => stopped(`the sending thread stopped (exit code ${code})`))
    return started
  }

  return {
    run(job, signal) {
      worker ??= start()
      const target = worker
      const seq = (nextSeq += 1)
      // The thread keeps the process alive only while it has work (a CLI's drain waits for it; an idle one does not).
      if (waiting.size === 0) target.ref()
      return new Promise<SendResult>((resolve) => {
        const abort = () => target.postMessage({ type: 'abort', seq } satisfies ToWorker)
        waiting.set(seq, (result) => {
          signal.removeEventListener('abort', abort)
          if (waiting.size === 0 && worker === target) target.unref()
          resolve(result)
        })
        signal.addEventListener('abort', abort, { once: true })
        target.postMessage({ type: 'job', seq, job } satisfies ToWorker)
      })
    },
    async close() {
      const stopping = worker
      worker = undefined
      failAll('the service was closing')
      if (stopping) await stopping.terminate()
    },
  }
}

export type { DeliveryOutcome }
