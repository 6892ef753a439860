import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { AuthUser } from '../../plugins/auth.js'
import { AppError } from '../../shared/errors.js'

/** Whether a bearer token is an API key's secret (`sk_…`) rather than a person's token. */
export function isApiKeySecret(token: string): boolean {
  return token.startsWith('sk_')
}

/**
 * The caller an API key's secret stands for: an admin of the key's staff role. 401 `invalidToken` for an unknown,
 * revoked or expired key.
 */
export async function authenticateApiKey(_db: Kysely<Database>, _secret: string): Promise<AuthUser> {
  // Keys are not issued yet (src/modules/staff/api-keys.*): no secret is known.
  throw new AppError(401, 'invalidToken')
}
