import type { Config } from './index.js'
import type { Reader } from './read.js'

/** Redis, for the auth rate limit's counters (in memory without it). */
export function readRedis(read: Reader): Pick<Config, 'redisUrl' | 'redisTimeouts'> {
  const redisUrl = read.string('REDIS_URL') ?? null
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) read.problem('REDIS_URL must start with redis:// or rediss://')
  // Redis answers in well under a millisecond; a command that takes 200 ms is an outage, not load.
  const redisTimeouts = {
    connectMs: read.integer('REDIS_CONNECT_TIMEOUT_MS', 1000, 10, 60_000),
    commandMs: read.integer('REDIS_COMMAND_TIMEOUT_MS', 200, 10, 60_000),
  }
  return { redisUrl, redisTimeouts: Object.freeze(redisTimeouts) }
}
