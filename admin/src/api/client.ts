import createClient, { type Middleware } from 'openapi-fetch'
import { HttpError } from 'react-admin'
import type { paths } from './schema'

/** What the dashboard keeps of a signed-in admin, in localStorage. */
export interface Session {
  token: string
  user: { id: string; name: string; email: string; role: string }
}

const SESSION_KEY = 'shop-admin.session'

export function readSession(): Session | null {
  try {
    const raw = localStorage.getItem(SESSION_KEY)
    return raw ? (JSON.parse(raw) as Session) : null
  } catch {
    return null
  }
}

export function writeSession(session: Session | null): void {
  if (session) localStorage.setItem(SESSION_KEY, JSON.stringify(session))
  else localStorage.removeItem(SESSION_KEY)
}

export const UNREACHABLE = 'The shop API cannot be reached. Check that the service is running, then try again.'

const bearer: Middleware = {
  onRequest({ request }) {
    const session = readSession()
    if (session && !request.headers.has('Authorization')) request.headers.set('Authorization', `Bearer ${session.token}`)
    return request
  },
}

/** A fetch that turns "no answer at all" into one clear message. */
async function reachingFetch(input: Request): Promise<Response> {
  try {
    return await fetch(input)
  } catch {
    throw new HttpError(UNREACHABLE, 0, { error: UNREACHABLE })
  }
}

/** The service's API, typed from its own OpenAPI document (schema.d.ts). Same origin: the service serves the dashboard. */
export const api = createClient<paths>({ baseUrl: window.location.origin, fetch: reachingFetch })
api.use(bearer)

/** The API's `{error}` as a message, whatever came back (a proxy's HTML page has none). */
export function errorMessage(error: unknown, response: Response): string {
  if (error && typeof error === 'object' && 'error' in error && typeof error.error === 'string') return error.error
  if (response.status >= 500) return `The shop API answered ${response.status}. Try again in a moment.`
  return `The shop API answered ${response.status}.`
}

/**
 * The body of a successful call, or an HttpError react-admin understands. A 422 whose message starts with a field name
 * of the form (`price must not be less than 0`) is also given as that field's error, so the form shows it beside the field.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }, fields: readonly string[] = []): T {
  if (result.response.ok && result.error === undefined) return result.data as T
  const message = errorMessage(result.error, result.response)
  const body: { error: string; errors?: Record<string, string> } = { error: message }
  if (result.response.status === 422 || result.response.status === 409) {
    const field = fieldOf(message, fields)
    if (field) body.errors = { [field]: message, root: { serverError: message } as never }
  }
  throw new HttpError(message, result.response.status, body)
}

/** `name should not be empty` → `name`; the Spanish category messages name their field by meaning. */
function fieldOf(message: string, fields: readonly string[]): string | undefined {
  const first = message.split(' ')[0] ?? ''
  if (fields.includes(first)) return first
  if (fields.includes('categoryId') && message === 'La categoría no existe') return 'categoryId'
  if (fields.includes('name') && message === 'La categoría ya existe') return 'name'
  if (fields.includes('email') && message === 'El email ya está en uso') return 'email'
  if (fields.includes('password') && /contraseña/i.test(message)) return 'password'
  if (fields.includes('role') && /rol/i.test(message)) return 'role'
  return undefined
}
