import { HttpError } from 'react-admin'
import { isProblem } from '../../../clients/typescript/index.js'
import type { components } from './schema'

/** An error as the API answers it to the dashboard: problem details (RFC 9457), asked for by the typed client. */
export type Problem = components['schemas']['Problem']
/** What went wrong, for the dashboard to act on (docs/api.md, "Error codes"): never the message's wording. */
export type ErrorCode = Problem['code']

/**
 * The message to show of a failed call: the problem's `detail`, or the `{error}` of an answer without problem
 * details (a proxy in front of the service, an older service), or the status when there is neither (an HTML page).
 */
export function errorMessage(error: unknown, response: Response): string {
  if (isProblem(error)) return error.detail
  if (error && typeof error === 'object' && 'error' in error && typeof error.error === 'string') return error.error
  if (response.status >= 500) return `The shop API answered ${response.status}. Try again in a moment.`
  return `The shop API answered ${response.status}.`
}

/**
 * What a failed call gives react-admin: the message; the problem's code, when the API gave one; and for a form, the
 * field the error is about (shown beside that field, and the message as the form's notice).
 */
export interface FailureBody {
  error: string
  code?: ErrorCode
  errors?: { [field: string]: string | { serverError: string } }
}

/**
 * The codes that concern one field of a form although the API names none (its `field` is for validation failures
 * and the errors listed with their field in src/shared/errors.ts, messageFields).
 */
const codeFields: Partial<Record<ErrorCode, string>> = {
  cannot_change_own_role: 'role',
}

/** An HttpError react-admin understands: `field`, when one of the form's `fields`, gets the message beside it. */
export function failure(message: string, status: number, { code, field, fields = [] }: { code?: ErrorCode; field?: string; fields?: readonly string[] } = {}) {
  const body: FailureBody = { error: message, ...(code ? { code } : {}) }
  const formField = field ?? (code ? codeFields[code] : undefined)
  if (formField !== undefined && fields.includes(formField)) body.errors = { [formField]: message, root: { serverError: message } }
  return new HttpError(message, status, body)
}

/**
 * The body of a successful call, or an HttpError react-admin understands. Problem details with a `field` among the
 * form's `fields` (a validation failure, a duplicate e-mail or category name) are also given as that field's error,
 * so the form shows the message beside the field. Nothing is read from the message's wording.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }, fields: readonly string[] = []): T {
  if (result.response.ok && result.error === undefined && result.data !== undefined) return result.data
  const message = errorMessage(result.error, result.response)
  if (!isProblem(result.error)) throw failure(message, result.response.status)
  throw failure(message, result.response.status, { code: result.error.code, field: result.error.field, fields })
}

/** The API's code of an error a call failed with (an HttpError of `unwrap`), to react to a case by its code. */
export function errorCode(error: unknown): ErrorCode | undefined {
  if (!(error instanceof HttpError)) return undefined
  const body: unknown = error.body
  if (typeof body !== 'object' || body === null || !('code' in body) || typeof body.code !== 'string') return undefined
  return body.code as ErrorCode
}
