import { describe, expect, it } from 'vitest'
import { timeOrderedId } from '../../src/shared/ids.js'

describe('timeOrderedId', () => {
  it('is a UUIDv7: version 7, RFC variant, the time in milliseconds in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 23, 22, 0, 0, 123)
    const id = timeOrderedId(at)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toBe(at)
  })

  it('sorts by time (as text, as the databases compare it), and two ids of one millisecond differ', () => {
    const ids = [5, 1, 4, 2, 3].map((ms) => timeOrderedId(Date.UTC(2026, 0, 1) + ms))
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 5].map((ms) => ids[[5, 1, 4, 2, 3].indexOf(ms)]))
    const now = Date.now()
    expect(new Set(Array.from({ length: 1000 }, () => timeOrderedId(now))).size).toBe(1000)
  })
})
