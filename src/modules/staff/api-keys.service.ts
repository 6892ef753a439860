import type { Kysely } from 'kysely'
import type { ApiKeyRow, Database } from '../../db/database.js'
import { type AuditSource, recordAudit } from './audit-log.js'
import { AppError, messages } from '../../shared/errors.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { issueSecret } from './api-key-auth.js'
import type { ApiKey, ApiKeyWithSecret, CreateApiKeyInput } from './api-keys.schemas.js'
import * as repo from './api-keys.repository.js'

type Db = Kysely<Database>

/** A key as the API answers it: never its secret or the secret's hash. */
export function apiKeyRowToApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    staffRole: row.staff_role,
    prefix: `sk_${row.lookup_id}`,
    createdBy: row.created_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }
}

export async function listApiKeys(db: Db, page: { limit?: number; offset?: number }): Promise<{ keys: ApiKey[]; total: number }> {
  const limit = page.limit ?? 100
  const offset = page.offset ?? 0
  const [rows, total] = await Promise.all([repo.listApiKeys(db, { limit, offset }), repo.countApiKeys(db)])
  return { keys: rows.map(apiKeyRowToApiKey), total }
}

/** A new key made by the admin `createdBy`, with its secret (the only time, with rotation, that it is shown). 422 for a past `expiresAt`. */
export async function createApiKey(db: Db, createdBy: number, input: CreateApiKeyInput, audit: AuditSource): Promise<ApiKeyWithSecret> {
  const now = nowIso()
  const expiresAt = input.expiresAt == null ? null : new Date(input.expiresAt).toISOString()
  if (expiresAt !== null && expiresAt <= now) throw new ValidationError(messages.expiresAtPast, 'expiresAt')
  const { secret, lookupId, secretHash } = issueSecret()
  return db.transaction().execute(async (trx) => {
    const row = await repo.insertApiKey(trx, {
      name: input.name,
      staff_role: input.staffRole,
      lookup_id: lookupId,
      secret_hash: secretHash,
      created_by: createdBy,
      created_at: now,
      expires_at: expiresAt,
      last_used_at: null,
      revoked_at: null,
    })
    const key = apiKeyRowToApiKey(row)
    // The answer carries the secret; the entry's copy reads [REDACTED].
    await recordAudit(trx, { by: audit, action: 'api_key.create', entityType: 'api_key', entityId: key.id, before: null, after: { ...key, secret } })
    return { ...key, secret }
  })
}

/**
 * A new secret (and lookup id) for the key; the old secret stops at once (the route empties the keys' cache). The
 * name, role and expiry stay. 404 for an unknown key, 409 for a revoked one.
 */
export async function rotateApiKey(db: Db, id: number, audit: AuditSource): Promise<ApiKeyWithSecret> {
  const { secret, lookupId, secretHash } = issueSecret()
  return db.transaction().execute(async (trx) => {
    const before = await repo.findApiKeyById(trx, id)
    const row = await repo.replaceApiKeySecret(trx, id, { lookup_id: lookupId, secret_hash: secretHash })
    if (row && before) {
      const key = apiKeyRowToApiKey(row)
      await recordAudit(trx, {
        by: audit,
        action: 'api_key.rotate',
        entityType: 'api_key',
        entityId: id,
        before: apiKeyRowToApiKey(before),
        after: { ...key, secret },
      })
      return { ...key, secret }
    }
    if (!(await repo.findApiKeyById(trx, id))) throw new AppError(404, 'apiKeyNotFound')
    throw new AppError(409, 'apiKeyRevoked')
  })
}

/** Revokes the key for good; the row stays (lists, the audit log's names). Revoking it again changes nothing. 404 for an unknown key. */
export async function revokeApiKey(db: Db, id: number, audit: AuditSource): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const before = await repo.findApiKeyById(trx, id)
    if (!before) throw new AppError(404, 'apiKeyNotFound')
    // Revoking again changes nothing, and records nothing.
    if (before.revoked_at !== null) return
    await repo.revokeApiKey(trx, id, nowIso())
    const after = await repo.findApiKeyById(trx, id)
    await recordAudit(trx, {
      by: audit,
      action: 'api_key.revoke',
      entityType: 'api_key',
      entityId: id,
      before: apiKeyRowToApiKey(before),
      after: after ? apiKeyRowToApiKey(after) : null,
    })
  })
}
