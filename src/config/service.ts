import { resolve } from 'node:path'
import type { Config } from './index.js'
import type { Reader } from './read.js'

/** NODE_ENV and DATA_DIR: read first, other sections depend on them. */
export function readService(read: Reader): Pick<Config, 'nodeEnv' | 'dataDir'> {
  const raw = read.string('NODE_ENV') ?? 'development'
  if (!['development', 'production', 'test'].includes(raw)) read.problem(`NODE_ENV must be development, production or test (got "${raw}")`)
  const nodeEnv = (['production', 'test'].includes(raw) ? raw : 'development') as Config['nodeEnv']
  return { nodeEnv, dataDir: resolve(read.string('DATA_DIR') ?? './data') }
}
