import { email, password } from '../users/users.schemas.js'

/** An opaque token as the client got it (ours are 43 characters). */
const token = { type: 'string', minLength: 1, maxLength: 200 } as const

export const RefreshBody = {
  type: 'object',
  required: ['refreshToken'],
  properties: { refreshToken: token },
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
