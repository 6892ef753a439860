import type { FromSchema } from 'json-schema-to-ts'
import { messages } from '../../shared/errors.js'
import { compileValidator, PageQueryProperties, ValidationError } from '../../shared/validation.js'
import { PERMISSIONS, STAFF_ROLES } from '../staff/permissions.js'

const name = { type: 'string', minLength: 1, maxLength: 100 } as const
// Not a string at all is as much "not a valid e-mail" / "not customer or admin" as a wrong string.
export const email = { type: 'string', format: 'email', maxLength: 254, errorMessages: { format: messages.invalidEmail, type: messages.invalidEmail } } as const
export const password = {
  type: 'string',
  minLength: 6,
  maxLength: 128,
  errorMessages: { minLength: messages.passwordTooShort },
} as const
const role = { type: 'string', enum: ['customer', 'admin'], errorMessages: { enum: messages.badRole, type: messages.badRole } } as const
/** An admin's staff role (docs/staff.md); a customer has none, whatever the body says. */
const staffRole = { type: 'string', enum: STAFF_ROLES, errorMessages: { enum: messages.badStaffRole, type: messages.badStaffRole } } as const

export const RegisterBody = {
  type: 'object',
  required: ['name', 'email', 'password'],
  properties: { name, email, password },
  // Anything else (a `role`, say) is dropped before the handler sees the body.
  additionalProperties: false,
} as const

export const LoginBody = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email, password: { type: 'string', minLength: 1, maxLength: 128 } },
  additionalProperties: false,
} as const

export const CreateUserBody = {
  type: 'object',
  required: ['name', 'email', 'password', 'role'],
  properties: { name, email, password, role, staffRole },
  additionalProperties: false,
} as const

export const UpdateUserBody = {
  type: 'object',
  properties: { name, email, role, staffRole, password },
  additionalProperties: false,
  minProperties: 1,
} as const

/** PATCH /auth/me: the caller's own name, e-mail or password; the current password when the e-mail or password changes. */
export const UpdateAccountBody = {
  type: 'object',
  properties: { name, email, password, currentPassword: { type: 'string', maxLength: 128 } },
  additionalProperties: false,
  minProperties: 1,
} as const

export const ListUsersQuery = {
  type: 'object',
  // `role`: only customers, or only admins (the dashboard's staff page).
  properties: { ...PageQueryProperties, role },
  additionalProperties: false,
} as const

export const User = {
  title: 'User',
  type: 'object',
  required: ['id', 'name', 'email', 'role', 'staffRole', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string', enum: ['customer', 'admin'] },
    staffRole: { type: ['string', 'null'], enum: [...STAFF_ROLES, null] },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const

/** GET /auth/me: the caller, and what their staff role permits, in the table's order (none for a customer). */
export const Me = {
  title: 'Me',
  type: 'object',
  required: [...User.required, 'permissions'],
  properties: { ...User.properties, permissions: { type: 'array', items: { type: 'string', enum: PERMISSIONS } } },
} as const

/** In the responses of register and login only, the user id is a string. */
const AuthUser = {
  type: 'object',
  required: ['id', 'name', 'email', 'role'],
  properties: { ...User.properties, id: { type: 'string' } },
} as const

export const RegisterResponse = {
  title: 'Registration',
  type: 'object',
  required: ['message', 'user'],
  properties: { message: { type: 'string' }, user: { ...AuthUser, required: [...AuthUser.required, 'createdAt'] } },
} as const

export const LoginResponse = {
  title: 'Login',
  type: 'object',
  required: ['token', 'refreshToken', 'user'],
  properties: {
    token: { type: 'string' },
    refreshToken: { type: 'string' },
    user: {
      ...AuthUser,
      properties: {
        id: AuthUser.properties.id,
        name: User.properties.name,
        email: User.properties.email,
        role: User.properties.role,
        staffRole: User.properties.staffRole,
      },
    },
  },
} as const

export type RegisterInput = FromSchema<typeof RegisterBody>
export type CreateUserInput = FromSchema<typeof CreateUserBody>
export type UpdateUserInput = FromSchema<typeof UpdateUserBody>
export type UpdateAccountInput = FromSchema<typeof UpdateAccountBody>
/** A user as the API shows it: never the hash. */
export type User = FromSchema<typeof User>

const accountFields = { name, email, password } as const
const accountChecks = Object.entries(accountFields).map(([field, schema]) => ({
  field: field as keyof typeof accountFields,
  check: compileValidator({ type: 'object', required: [field], properties: { [field]: schema } }),
}))

/**
 * The API's own rules for a new account (name, e-mail, password), for the operator's ways of making
 * an admin: the CLI and the ADMIN_* variables. An admin made with an e-mail the log-in form refuses
 * could never log in. Returns the field and the API's message for the first broken rule, or null.
 */
export function accountProblem(input: { name: string; email: string; password: string }): { field: keyof typeof accountFields; message: string } | null {
  for (const { field, check } of accountChecks) {
    try {
      check({ [field]: input[field] })
    } catch (error) {
      if (error instanceof ValidationError) return { field, message: error.message }
      throw error
    }
  }
  return null
}
