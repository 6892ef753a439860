import { HttpError } from 'react-admin'

/** The API's `{error}` as a message, whatever came back (a proxy's HTML page has none). */
export function errorMessage(error: unknown, response: Response): string {
  if (error && typeof error === 'object' && 'error' in error && typeof error.error === 'string') return error.error
  if (response.status >= 500) return `The shop API answered ${response.status}. Try again in a moment.`
  return `The shop API answered ${response.status}.`
}

/** What a failed call gives react-admin: the message, and for a form the field it names (shown beside that field). */
interface FailureBody {
  error: string
  errors?: { [field: string]: string | { serverError: string } }
}

/**
 * The body of a successful call, or an HttpError react-admin understands. A 422 whose message starts with a field name
 * of the form (`price must not be less than 0`) is also given as that field's error, so the form shows it beside the field.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }, fields: readonly string[] = []): T {
  if (result.response.ok && result.error === undefined && result.data !== undefined) return result.data
  const message = errorMessage(result.error, result.response)
  const body: FailureBody = { error: message }
  if (result.response.status === 422 || result.response.status === 409) {
    const field = fieldOf(message, fields)
    if (field) body.errors = { [field]: message, root: { serverError: message } }
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
