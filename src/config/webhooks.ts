import type { Config } from './index.js'
import type { Reader } from './read.js'

/** Webhooks (src/modules/webhooks): which addresses a webhook URL may reach. */
export function readWebhooks(read: Reader): Pick<Config, 'webhooksAllowPrivate'> {
  const raw = read.string('WEBHOOKS_ALLOW_PRIVATE') ?? 'false'
  if (!['true', 'false'].includes(raw)) read.problem(`WEBHOOKS_ALLOW_PRIVATE must be true or false (got "${raw}")`)
  return { webhooksAllowPrivate: raw === 'true' }
}
