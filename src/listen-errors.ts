import type { Config } from './config.js'

/**
 * The one line to print when the server cannot listen (the port is taken, privileged, or HOST is not an
 * address of this machine), naming the variable to change; undefined for any other failure.
 */
export function listenFailureLine(error: unknown, config: Pick<Config, 'port' | 'host' | 'metrics'>): string | undefined {
  if (!(error instanceof Error)) return undefined
  const { code, port, address, hostname } = error as Error & { code?: unknown; port?: unknown; address?: unknown; hostname?: unknown }
  const portNumber = typeof port === 'number' ? port : config.port
  const where = typeof address === 'string' ? address : config.host
  // The metrics server (METRICS_PORT) listens on HOST too, as the app is made ready.
  const variable = config.metrics.port !== null && config.metrics.port !== 0 && portNumber === config.metrics.port ? 'METRICS_PORT' : 'PORT'
  switch (code) {
    case 'EADDRINUSE':
      return `Cannot start: port ${portNumber} on ${where} is already in use (EADDRINUSE); stop what holds it or set ${variable}.`
    case 'EACCES':
      return `Cannot start: port ${portNumber} on ${where} needs privileges this process does not have (EACCES); use a port from 1024 up or set ${variable}.`
    case 'EADDRNOTAVAIL':
      return `Cannot start: ${where} is not an address of this machine (EADDRNOTAVAIL); set HOST.`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Cannot start: HOST ${typeof hostname === 'string' ? hostname : config.host} does not resolve to an address (${code}); set HOST.`
    default:
      return undefined
  }
}
