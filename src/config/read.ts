/**
 * The parsing helpers of the configuration: how a variable is read as a string, an integer, a boolean, a
 * duration or an http(s) URL. A reader never throws: a bad value adds one line naming the variable to
 * `problems` and the fallback is used, so that loadConfig (index.ts) can report every bad variable at once.
 */
export type Env = Record<string, string | undefined>

export interface Reader {
  /** One line per bad variable, in the order they were read. */
  readonly problems: string[]
  /** Adds a line of a section's own rule (a value that parses but does not fit with another). */
  problem(line: string): void
  /** The value without surrounding spaces; undefined when unset or blank. */
  string(name: string): string | undefined
  /** The value exactly as given, spaces included (a password or a secret may have some). */
  raw(name: string): string | undefined
  /** A whole number from `min` to `max`; `fallback` when unset. */
  integer(name: string, fallback: number, min: number, max: number): number
  /** true, false, 1 or 0, in any case; `fallback` when unset. Anything else (yes, on, …) is a problem. */
  boolean(name: string, fallback: boolean): boolean
  /** A duration of at least one second (durationMs's forms), in milliseconds; `fallback` is one too. */
  duration(name: string, fallback: string): number
  /** An absolute http(s) URL (a scheme and a host), without its trailing slashes; `fallback` when unset. */
  httpUrl(name: string, fallback: string): string
}

const TRUE = new Set(['true', '1'])
const FALSE = new Set(['false', '0'])

/** true, false, 1 or 0 in any case; undefined for anything else. */
export function parseBoolean(raw: string): boolean | undefined {
  const word = raw.trim().toLowerCase()
  return TRUE.has(word) ? true : FALSE.has(word) ? false : undefined
}

/** Starts with http:// or https:// and a host. */
export function isHttpUrl(raw: string): boolean {
  return /^https?:\/\/[^/\s]+/.test(raw)
}

/** A duration as JWT_EXPIRES_IN takes it: 30d, 12h, 90m, 10s, 500ms, 2w, 1y, `3 days`; a bare number is seconds. */
export const DURATION = /^\d+(ms|s|m|h|d|w|y)?$|^\d+\s?(seconds?|minutes?|hours?|days?|weeks?)$/

const DURATION_UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  second: 1000,
  m: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  y: 31_557_600_000,
}

/** Milliseconds of a duration in DURATION's forms (a bare number is seconds), or undefined. */
export function durationMs(raw: string): number | undefined {
  if (!DURATION.test(raw)) return undefined
  const match = /^(\d+)\s?([a-z]*)$/.exec(raw)
  if (!match) return undefined
  // "days" is "day", "ms" stays "ms"; no unit is seconds.
  const unit = match[2] === '' ? 's' : match[2] === 'ms' ? 'ms' : match[2]!.replace(/s$/, '') || 's'
  const factor = DURATION_UNIT_MS[unit]
  return factor === undefined ? undefined : Number(match[1]) * factor
}

export function createReader(env: Env): Reader {
  const problems: string[] = []
  const string = (name: string): string | undefined => {
    const v = env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }
  return {
    problems,
    problem: (line) => void problems.push(line),
    string,
    raw: (name) => env[name],
    integer(name, fallback, min, max) {
      const raw = string(name)
      if (raw === undefined) return fallback
      if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`)
        return fallback
      }
      return Number(raw)
    },
    boolean(name, fallback) {
      const raw = string(name)
      if (raw === undefined) return fallback
      const parsed = parseBoolean(raw)
      if (parsed === undefined) problems.push(`${name} must be true or false (got "${raw}")`)
      return parsed ?? fallback
    },
    duration(name, fallback) {
      const raw = string(name) ?? fallback
      const ms = durationMs(raw)
      if (ms === undefined || ms < 1000) {
        problems.push(`${name} must be a duration of at least one second such as 30d, 12h, 3600 or 30m (got "${raw}")`)
        return durationMs(fallback) as number
      }
      return ms
    },
    httpUrl(name, fallback) {
      const raw = string(name) ?? fallback
      if (!isHttpUrl(raw)) problems.push(`${name} must be an absolute http(s) URL (got "${raw}")`)
      return raw.replace(/\/+$/, '')
    },
  }
}
