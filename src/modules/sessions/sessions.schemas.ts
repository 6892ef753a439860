import { email, password } from '../users/users.schemas.js'

/** An opaque token as the client got it (ours are 43 characters). */
const token = { type: 'string', minLength: 1, maxLength: 200 } as const

/**
 * No upper length: any string that is not a refresh token, however long (an access token, a 5,000-character
 * string), is a 401 like an unknown one; the service checks its form before hashing it (tokens.ts).
 */
export const RefreshBody = {
  type: 'object',
  required: ['refreshToken'],
  properties: { refreshToken: { type: 'string', minLength: 1 } },
  additionalProperties: false,
} as const

export const TokenPair = {
  title: 'TokenPair',
  type: 'object',
  required: ['token', 'refreshToken'],
  properties: { token: { type: 'string' }, refreshToken: { type: 'string' } },
} as const

export const LogoutBody = {
  type: 'object',
  properties: { refreshToken: token },
  additionalProperties: false,
} as const

export const PasswordResetBody = {
  type: 'object',
  required: ['email'],
  properties: { email },
  additionalProperties: false,
} as const

export const PasswordResetConfirmBody = {
  type: 'object',
  required: ['token', 'password'],
  properties: { token, password },
  additionalProperties: false,
} as const
