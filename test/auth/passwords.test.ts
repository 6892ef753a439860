import { describe, expect, it } from 'vitest'
import { hashPassword, verifyPassword } from '../../src/modules/users/passwords.js'

// Password hashing (src/modules/users/passwords.ts): argon2id with OWASP's parameters, on threads
// of its own, so the event loop keeps turning while a hash is computed.

describe('password hashing', () => {
  it('stores argon2id hashes with OWASP parameters and a salt of their own', async () => {
    const [first, second] = await Promise.all([hashPassword('secreto123'), hashPassword('secreto123')])
    expect(first).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
    expect(first).not.toContain('secreto123')
    expect(second).not.toBe(first)
  })

  it('verifies the right password and refuses a wrong one, an unknown user and a broken hash', async () => {
    const stored = await hashPassword('correcta-1')
    await expect(verifyPassword(stored, 'correcta-1')).resolves.toBe(true)
    await expect(verifyPassword(stored, 'correcta-2')).resolves.toBe(false)
    await expect(verifyPassword(undefined, 'correcta-1')).resolves.toBe(false)
    await expect(verifyPassword('not-a-hash', 'correcta-1')).resolves.toBe(false)
  })

  it('answers every one of more concurrent jobs than it has threads, each with its own result', async () => {
    const stored = await hashPassword('cola-de-espera')
    const guesses = ['cola-de-espera', 'otra', 'cola-de-espera', 'x', 'cola-de-espera', '', 'cola-de-espera', 'y']
    const results = await Promise.all(guesses.map((guess) => verifyPassword(stored, guess)))
    expect(results).toEqual(guesses.map((guess) => guess === 'cola-de-espera'))
  })

  it('does not hold the event loop while hashing', async () => {
    // Hashing on the event loop would finish inside the call, before any turn of the loop.
    let turns = 0
    let done = false
    const hashing = hashPassword('bucle-libre').finally(() => (done = true))
    await new Promise<void>((resolve) => {
      const turn = () => {
        if (done) return resolve()
        turns += 1
        setImmediate(turn)
      }
      setImmediate(turn)
    })
    await hashing
    expect(turns).toBeGreaterThan(0)
  })
})
