import type { Config } from './index.js'
import type { Reader } from './read.js'

/** Webhooks (src/modules/webhooks): which addresses a webhook URL may reach. */
export function readWebhooks(read: Reader): Pick<Config, 'webhooksAllowPrivate'> {
  return { webhooksAllowPrivate: read.boolean('WEBHOOKS_ALLOW_PRIVATE', false) }
}
