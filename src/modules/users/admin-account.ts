import { accountProblem } from './users.schemas.js'

/** The first admin, made at start-up when no user has its e-mail (users.service.ts ensureAdmin). */
export interface AdminAccount {
  readonly email: string
  readonly password: string
  readonly name: string
}

/**
 * The first admin from the operator's ADMIN_EMAIL, ADMIN_PASSWORD and ADMIN_NAME (read by src/config/auth.ts):
 * none when neither the e-mail nor the password is given; else an account by the API's own rules for one
 * (an admin the log-in form would refuse could never log in), the e-mail in lower case, or the one line
 * that says which variable breaks them.
 */
export function adminFromVariables(variables: {
  email?: string | undefined
  password?: string | undefined
  name?: string | undefined
}): { admin: AdminAccount | null } | { problem: string } {
  const { email, password } = variables
  if (email === undefined && (password === undefined || password === '')) return { admin: null }
  const candidate = { email: email ?? '', password: password ?? '', name: variables.name ?? 'Admin' }
  const problem = accountProblem(candidate)
  if (problem?.field === 'email') return { problem: 'ADMIN_EMAIL must be a valid e-mail address when ADMIN_PASSWORD is set' }
  if (problem?.field === 'password') {
    return {
      problem:
        candidate.password.length < 6
          ? 'ADMIN_PASSWORD must be at least 6 characters when ADMIN_EMAIL is set'
          : 'ADMIN_PASSWORD must be at most 128 characters',
    }
  }
  if (problem?.field === 'name') return { problem: 'ADMIN_NAME must be 1 to 100 characters' }
  return { admin: { ...candidate, email: candidate.email.toLowerCase() } }
}
