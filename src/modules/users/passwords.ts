import { availableParallelism } from 'node:os'
import { hash, verify } from '@node-rs/argon2'

// OWASP's argon2id recommendation: 19 MiB, 2 iterations, 1 lane. Hashing runs on libuv's
// thread pool, so a burst of logins never blocks the event loop.
const OWASP = { algorithm: 2 /* Algorithm.Argon2id, a const enum */, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

// Each hash keeps one core busy for tens of milliseconds. Left alone, a burst of logins fills the
// whole thread pool (4 threads) and takes every core from the event loop, so every other request
// waits. At most (cores - 1) hashes run at once; the others queue, and one core stays free.
const HASHING_SLOTS = Math.max(1, availableParallelism() - 1)
let hashing = 0
const waiting: (() => void)[] = []

async function withHashingSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashing >= HASHING_SLOTS) await new Promise<void>((resolve) => waiting.push(resolve))
  else hashing += 1
  try {
    return await work()
  } finally {
    // The slot passes straight to the next in line, or is given back.
    const next = waiting.shift()
    if (next) next()
    else hashing -= 1
  }
}

export function hashPassword(password: string): Promise<string> {
  return withHashingSlot(() => hash(password, OWASP))
}

let dummyHash: Promise<string> | undefined

/**
 * Verifies a password against a stored hash. With no hash (unknown e-mail) it verifies against a
 * throw-away hash, so both failures take about the same time.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  if (storedHash === undefined) {
    dummyHash ??= hashPassword('not-a-real-password')
    const throwAway = await dummyHash
    await withHashingSlot(() => verify(throwAway, password)).catch(() => false)
    return false
  }
  return withHashingSlot(() => verify(storedHash, password)).catch(() => false)
}
