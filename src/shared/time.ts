/** The one timestamp format of the service: ISO 8601 UTC with milliseconds. */
export function nowIso(): string {
  return new Date().toISOString()
}
