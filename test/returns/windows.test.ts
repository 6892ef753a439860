import { describe, expect, it } from 'vitest'
import { addDays, localDate, nextWorkingDay, returnDeadline, windowClosed, withdrawalDeadline } from '../../src/modules/returns/windows.js'

// The withdrawal and return windows: calendar days of the shop's zone, Saturdays and Sundays moved to Monday (for
// withdrawals), the end of the last day in that zone whatever the clocks do.

const delivered = (at: string) => ({ delivered: true, lastDeliveredAt: at })

describe('the local date of an instant', () => {
  it('is the day in the shop’s zone, not in UTC', () => {
    expect(localDate(new Date('2026-03-10T23:30:00Z'), 'UTC')).toBe('2026-03-10')
    expect(localDate(new Date('2026-03-10T23:30:00Z'), 'Europe/Madrid')).toBe('2026-03-11')
    expect(localDate(new Date('2026-03-11T03:00:00Z'), 'America/New_York')).toBe('2026-03-10')
    expect(localDate(new Date('2026-03-10T11:30:00Z'), 'Pacific/Kiritimati')).toBe('2026-03-11')
  })
})

describe('the withdrawal deadline', () => {
  it('is null until the order is all delivered', () => {
    expect(withdrawalDeadline({ delivered: false, lastDeliveredAt: null }, 'UTC', 14)).toBeNull()
  })

  it('counts WITHDRAWAL_DAYS from the day of the last delivery, in the shop’s zone', () => {
    // Tuesday 2026-03-10 + 14 = Tuesday 2026-03-24.
    expect(withdrawalDeadline(delivered('2026-03-10T12:00:00Z'), 'UTC', 14)).toBe('2026-03-24')
    // Delivered late on the 10th in UTC, already the 11th in Madrid: Wednesday 25th.
    expect(withdrawalDeadline(delivered('2026-03-10T23:30:00Z'), 'Europe/Madrid', 14)).toBe('2026-03-25')
    // Early on the 11th in UTC, still the 10th in New York.
    expect(withdrawalDeadline(delivered('2026-03-11T03:00:00Z'), 'America/New_York', 14)).toBe('2026-03-24')
    expect(withdrawalDeadline(delivered('2026-03-10T12:00:00Z'), 'UTC', 30)).toBe('2026-04-09')
  })

  it('moves a Saturday or a Sunday to the Monday after', () => {
    // Saturday 2026-03-07 + 14 = Saturday 21st → Monday 23rd; Sunday 8th + 14 = Sunday 22nd → Monday 23rd.
    expect(withdrawalDeadline(delivered('2026-03-07T10:00:00Z'), 'UTC', 14)).toBe('2026-03-23')
    expect(withdrawalDeadline(delivered('2026-03-08T10:00:00Z'), 'UTC', 14)).toBe('2026-03-23')
    // Friday stays Friday.
    expect(withdrawalDeadline(delivered('2026-03-06T10:00:00Z'), 'UTC', 14)).toBe('2026-03-20')
    // Friday 23:30 in UTC is Saturday in Madrid: the 14th day is a Saturday, moved to Monday.
    expect(withdrawalDeadline(delivered('2026-03-06T23:30:00Z'), 'Europe/Madrid', 14)).toBe('2026-03-23')
    expect(nextWorkingDay('2026-12-26')).toBe('2026-12-28')
    expect(nextWorkingDay('2026-12-27')).toBe('2026-12-28')
    expect(nextWorkingDay('2026-12-28')).toBe('2026-12-28')
  })

  it('crosses changes of summer time without gaining or losing a day', () => {
    // Madrid moves to summer time on 2026-03-29 and back on 2026-10-25.
    expect(withdrawalDeadline(delivered('2026-03-20T23:30:00Z'), 'Europe/Madrid', 14)).toBe('2026-04-06') // 21st + 14 = Sat 4th → Mon 6th
    expect(withdrawalDeadline(delivered('2026-10-20T22:30:00Z'), 'Europe/Madrid', 14)).toBe('2026-11-04')
    // New York's on 2026-03-08.
    expect(withdrawalDeadline(delivered('2026-03-02T04:30:00Z'), 'America/New_York', 14)).toBe('2026-03-16')
    expect(addDays('2026-02-27', 2)).toBe('2026-03-01')
    expect(addDays('2028-02-27', 2)).toBe('2028-02-29')
  })
})

describe('a window closes at the end of its last day in the shop’s zone', () => {
  it('open the whole last day, closed from the first instant of the next', () => {
    // Madrid in summer is UTC+2: the 24th ends at 21:59:59.999 UTC.
    expect(windowClosed('2026-06-24', new Date('2026-06-24T21:59:59.999Z'), 'Europe/Madrid')).toBe(false)
    expect(windowClosed('2026-06-24', new Date('2026-06-24T22:00:00.000Z'), 'Europe/Madrid')).toBe(true)
    // Winter: UTC+1.
    expect(windowClosed('2026-01-24', new Date('2026-01-24T22:59:59.999Z'), 'Europe/Madrid')).toBe(false)
    expect(windowClosed('2026-01-24', new Date('2026-01-24T23:00:00.000Z'), 'Europe/Madrid')).toBe(true)
    // West of UTC the last day runs on into the next UTC date.
    expect(windowClosed('2026-01-24', new Date('2026-01-25T04:59:59.999Z'), 'America/New_York')).toBe(false)
    expect(windowClosed('2026-01-24', new Date('2026-01-25T05:00:00.000Z'), 'America/New_York')).toBe(true)
    expect(windowClosed(null, new Date('2099-01-01T00:00:00Z'), 'UTC')).toBe(false)
  })

  it('the return deadline counts RETURN_DAYS with no weekend rule', () => {
    expect(returnDeadline(delivered('2026-03-07T10:00:00Z'), 'UTC', 14)).toBe('2026-03-21')
    expect(returnDeadline(delivered('2026-03-07T23:30:00Z'), 'Europe/Madrid', 30)).toBe('2026-04-07')
    expect(returnDeadline({ delivered: false, lastDeliveredAt: null }, 'UTC', 30)).toBeNull()
  })
})
