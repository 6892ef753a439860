import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane.
const OWASP = { algorithm: 2 /* Algorithm.Argon2id, a const enum */, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

/**
 * Each hash keeps a core busy for tens of milliseconds. Hashing therefore runs on threads of its
 * own, never on the event loop:
 * - at most (cores − 1) of them, so a burst of logins never takes every core;
 * - on Linux at a lower scheduling priority (nice 5), so that when the cores are contended the
 *   requests being served win and the logins wait a little longer. (`os.setPriority(0, …)` in a
 *   worker thread changes only that thread on Linux; elsewhere it would change the whole process,
 *   so it is not done there.)
 * Jobs beyond that queue in order. Idle threads do not keep the process alive.
 */
const HASHING_THREADS = Math.max(1, availableParallelism() - 1)
const HASHING_NICE = 5

// The worker is plain JavaScript evaluated from this string, so it runs the same under tsx, the
// compiled build and the tests; it loads argon2 from the path resolved here.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const argon2 = require(workerData.argon2)
if (workerData.nice !== undefined) {
  try { require('node:os').setPriority(0, workerData.nice) } catch {}
}
parentPort.on('message', (job) => {
  try {
    const value = job.op === 'hash' ? argon2.hashSync(job.password, job.options) : argon2.verifySync(job.hash, job.password)
    parentPort.postMessage({ ok: true, value })
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String((error && error.message) || error) })
  }
})
`
const ARGON2_PATH = createRequire(import.meta.url).resolve('@node-rs/argon2')

type HashJob = { op: 'hash'; password: string; options: typeof OWASP } | { op: 'verify'; hash: string; password: string }
type Reply = { ok: true; value: string | boolean } | { ok: false; message: string }

interface Queued {
  job: HashJob
  resolve: (value: string | boolean) => void
  reject: (error: Error) => void
}

class HashingThreads {
  private idle: Worker[] = []
  private running = 0
  private queue: Queued[] = []

  run(job: HashJob): Promise<string | boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject })
      this.dispatch()
    })
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const worker = this.idle.pop() ?? (this.running + this.idle.length < HASHING_THREADS ? this.spawn() : undefined)
      if (!worker) return
      this.assign(worker, this.queue.shift() as Queued)
    }
  }

  private spawn(): Worker {
    const workerData = { argon2: ARGON2_PATH, ...(process.platform === 'linux' ? { nice: HASHING_NICE } : {}) }
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData })
    // A thread that ends while idle leaves the pool (one that ends while busy: see `assign`).
    worker.once('exit', () => {
      this.idle = this.idle.filter((other) => other !== worker)
    })
    return worker
  }

  private assign(worker: Worker, queued: Queued): void {
    this.running += 1
    const settle = () => {
      this.running -= 1
      worker.off('message', onMessage)
      worker.off('error', onFailure)
      worker.off('exit', onExit)
    }
    const onMessage = (reply: Reply) => {
      settle()
      // Idle: the thread no longer keeps the process alive.
      worker.unref()
      this.idle.push(worker)
      if (reply.ok) queued.resolve(reply.value)
      else queued.reject(new Error(reply.message))
      this.dispatch()
    }
    // A thread that fails is dropped (a new one is made when needed); its job fails.
    const onFailure = (error: Error) => {
      settle()
      void worker.terminate()
      queued.reject(error)
      this.dispatch()
    }
    const onExit = (code: number) => onFailure(new Error(`hashing thread exited with code ${code}`))
    worker.on('message', onMessage)
    worker.on('error', onFailure)
    worker.on('exit', onExit)
    // Busy: an answer is awaited, so the process stays up for it (the CLI has nothing else running).
    worker.ref()
    worker.postMessage(queued.job)
  }
}

const threads = new HashingThreads()

export async function hashPassword(password: string): Promise<string> {
  return (await threads.run({ op: 'hash', password, options: OWASP })) as string
}

let dummyHash: Promise<string> | undefined

async function verifyAgainst(storedHash: string, password: string): Promise<boolean> {
  return (await threads.run({ op: 'verify', hash: storedHash, password }).catch(() => false)) === true
}

/**
 * Verifies a password against a stored hash. With no hash (unknown e-mail) it verifies against a
 * throw-away hash, so both failures take about the same time.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  if (storedHash === undefined) {
    dummyHash ??= hashPassword('not-a-real-password')
    await verifyAgainst(await dummyHash, password)
    return false
  }
  return verifyAgainst(storedHash, password)
}
