import type { Config } from './config.js'

/** Host names that only ever mean "this machine". */
function isLocalHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(hostname) || ['0.0.0.0', '[::1]', '[::]'].includes(hostname)
}

/**
 * Settings that are valid but almost certainly a mistake, one line each, logged at start-up: the
 * service still starts (a trial run on one machine is legitimate), but not silently.
 */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = []
  // PUBLIC_URL defaults to localhost; in production it ends up in every stored image URL and Link header.
  if (config.nodeEnv === 'production' && isLocalHost(new URL(config.publicUrl).hostname)) {
    warnings.push(
      `PUBLIC_URL is ${config.publicUrl} in production: image URLs and Link headers will point at this machine; set PUBLIC_URL to the address clients use`,
    )
  }
  return warnings
}
