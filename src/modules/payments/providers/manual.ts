import type { ManualProvider } from './provider.js'

/** Bank transfer or cash on delivery: an admin moves the order to `paid`, and refunds by the shop's own means. */
export const manualProvider: ManualProvider = Object.freeze({ name: 'manual' })
