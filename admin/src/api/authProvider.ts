import type { AuthProvider } from 'react-admin'
import { unwrap } from './answers'
import { ACCEPT, api, readSession, type Session, writeSession } from './client'

export const NOT_AN_ADMIN = 'This account is not allowed in: the dashboard is for the shop’s administrators only.'
export const SESSION_EXPIRED = 'Your session has expired. Sign in again to carry on where you were.'

/**
 * Sign-in through POST /auth/login. Only admins get in: a customer's token is not kept, and they are told why.
 * A 401 from any call ends the session and brings the admin back to sign-in; react-admin keeps the page they were on.
 */
/** Reads the signed-in admin's permissions (GET /auth/me) into the session: once per sign-in, not per page. */
async function rememberPermissions(): Promise<string[]> {
  const { permissions } = unwrap(await api.GET('/auth/me'))
  const session = readSession()
  if (session) writeSession({ ...session, permissions })
  return permissions
}

export const authProvider: AuthProvider = {
  async login({ username, password }: { username: string; password: string }) {
    const result = await api.POST('/auth/login', { body: { email: username, password } })
    const answer: { token: string; user: Session['user']; refreshToken?: unknown } = unwrap(result)
    if (answer.user.role !== 'admin') throw new Error(NOT_AN_ADMIN)
    const refreshToken = typeof answer.refreshToken === 'string' ? answer.refreshToken : undefined
    writeSession({ token: answer.token, user: answer.user, refreshToken })
    await rememberPermissions()
  },
  async logout() {
    const session = readSession()
    writeSession(null)
    // Ends the session on the service too, where it has sessions (POST /auth/logout); best effort, bounded.
    if (session?.refreshToken) {
      await fetch(`${window.location.origin}/auth/logout`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: ACCEPT, Authorization: `Bearer ${session.token}` },
        body: JSON.stringify({ refreshToken: session.refreshToken }),
        signal: AbortSignal.timeout(5_000),
      }).catch(() => undefined)
    }
  },
  async checkAuth() {
    // No "please log in" notice on the way to the sign-in page: the page says what to do.
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- react-admin's protocol: `message: false` means no notice
    if (!readSession()) throw { message: false }
  },
  async checkError(error: { status?: number }) {
    // react-admin then signs out (logout clears the session), says why, and comes back here after sign-in.
    if (error?.status === 401) throw Object.assign(new Error(SESSION_EXPIRED), { logoutUser: true })
  },
  async getIdentity() {
    const session = readSession()
    if (!session) throw new Error()
    return { id: session.user.id, fullName: session.user.name || session.user.email }
  },
  /** The staff role's permissions, in the API's order: what the menu, pages and buttons show. */
  async getPermissions() {
    const session = readSession()
    if (!session) return []
    return session.permissions ?? (await rememberPermissions())
  },
}
