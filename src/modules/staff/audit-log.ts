import { randomFillSync } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import type { Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import { prepared } from '../../db/prepared.js'

/** Who made a change: a signed-in staff member, an integration's API key, or the shop itself (a job, by name). */
export type AuditActor = { type: 'user'; id: number } | { type: 'api_key'; id: number; name: string } | { type: 'system'; name: string }

/** A change's author and the request it came with: what every entry of one request shares. */
export interface AuditSource {
  actor: AuditActor
  requestId: string | null
  ip: string | null
  userAgent: string | null
}

/** One change: `action` is `<entityType>.<verb>`; `before`/`after` the resource as answered (null on create/delete). */
export interface AuditEntry {
  /** Null for a change made by the shop's own tooling outside any request or job (the seed, a script): not recorded. */
  by: AuditSource | null
  action: string
  entityType: string
  entityId: string | number | null
  before: unknown
  after: unknown
}

/** The author of a staff request (a user, or an API key), with the request's id, address and user agent. */
export function auditSource(request: FastifyRequest): AuditSource {
  const key = request.user.apiKey
  const userAgent = request.headers['user-agent']
  return {
    actor: key !== undefined ? { type: 'api_key', id: key.id, name: key.name } : { type: 'user', id: request.user.id },
    requestId: request.id,
    ip: request.ip,
    userAgent: typeof userAgent === 'string' ? userAgent : null,
  }
}

/** The shop itself as the author, in a job named `job` (`order-expiry`): no request. */
export function systemSource(job: string): AuditSource {
  return { actor: { type: 'system', name: job }, requestId: null, ip: null, userAgent: null }
}

/**
 * Whether entries are written: always, in the service. Only the bench turns it off, in its own process
 * (bench/scenarios.ts, `admin-write`), to measure the same write without its entry.
 */
export const auditLogWrites = { on: true }

/**
 * Writes one entry of the audit log. Call it with the change's own transaction, so that the entry exists if and only
 * if the change does. A user's name is read by the insert itself (no query of its own), as it is at the change.
 */
export async function recordAudit(trx: Transaction<Database>, entry: AuditEntry): Promise<void> {
  if (entry.by === null || !auditLogWrites.on) return
  const { actor } = entry.by
  // The entry's time is its id's millisecond, so that the time filters can bound the id (its primary key).
  const id = uuidv7()
  await insertEntryStatement(trx, {
    id,
    at: new Date(uuidMs(id)).toISOString(),
    actorType: actor.type,
    actorId: actor.type === 'system' ? null : String(actor.id),
    actorName: actor.type === 'user' ? null : actor.name,
    userId: actor.type === 'user' ? actor.id : null,
    action: entry.action,
    entityType: entry.entityType,
    entityId: entry.entityId === null ? null : String(entry.entityId),
    before: redactedJson(entry.before),
    after: redactedJson(entry.after),
    requestId: entry.by.requestId,
    ip: entry.by.ip,
    userAgent: entry.by.userAgent,
  })
}

// Compiled once: an admin write adds this one statement to its transaction (building it with Kysely each time would
// cost about what running it does).
const insertEntryStatement = prepared(
  (
    db,
    v: {
      id: string
      at: string
      actorType: 'user' | 'api_key' | 'system'
      actorId: string | null
      actorName: string | null
      userId: number | null
      action: string
      entityType: string
      entityId: string | null
      before: string | null
      after: string | null
      requestId: string | null
      ip: string | null
      userAgent: string | null
    },
  ) =>
    db.insertInto('audit_log').values((eb) => ({
      id: v.id,
      at: v.at,
      actor_type: v.actorType,
      actor_id: v.actorId,
      // A key's name or a job's is given; a user's is theirs at the change.
      actor_name: eb.fn.coalesce(
        eb.cast<string | null>(eb.val(v.actorName), 'text'),
        eb
          .selectFrom('users')
          .select('name')
          .where('id', '=', v.userId as number),
      ),
      action: v.action,
      entity_type: v.entityType,
      entity_id: v.entityId,
      before: v.before,
      after: v.after,
      request_id: v.requestId,
      ip: v.ip,
      user_agent: v.userAgent,
    })),
)

export const REDACTED = '[REDACTED]'
const SECRET_KEY = /password|secret|token|hash/i

// A property's name that speaks of a secret: its value is replaced while the JSON is written (no copy of the resource).
const redactKey = (key: string, value: unknown) => (key !== '' && SECRET_KEY.test(key) ? REDACTED : value)

/**
 * `value` as stored: JSON with secrets redacted (see redact), or null. Most resources have no such word anywhere in
 * them: they are written once without the replacer (which doubles the time) and kept as they are when the JSON holds
 * none of the words; otherwise written again with it.
 */
function redactedJson(value: unknown): string | null {
  if (value == null) return null
  const json = JSON.stringify(value)
  return SECRET_KEY.test(json) ? JSON.stringify(value, redactKey) : json
}

/** A copy of `value` in which every property (at any depth) whose name speaks of a secret reads "[REDACTED]". */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact)
  if (value === null || typeof value !== 'object') return value
  const copy: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) copy[key] = SECRET_KEY.test(key) ? REDACTED : redact(inner)
  return copy
}

let lastMs = 0
let sequence = 0

// Random bytes drawn 4 KiB at a time: one call into the system's generator per 256 ids. Drawing 16 bytes per id cost
// 16 µs of an admin write's 1 ms in the admin-write bench (the generator's code is cold between requests), where
// this costs under 1 µs. `crypto.randomUUID` keeps a cache of the same kind; it makes v4 ids only.
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

function randomBytes16(): Buffer {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const bytes = Buffer.from(pool.subarray(poolOffset, poolOffset + 16))
  poolOffset += 16
  return bytes
}

/**
 * A UUIDv7 (RFC 9562) for the instant `ms`: 48 bits of Unix milliseconds, the version, 12 bits of sequence, the
 * variant, 62 random bits. Node's crypto makes v4 only; the `uuid` package makes v7, but draws its random bytes from
 * the system for each id (the cost said above). Within one millisecond the sequence counts up from a random start,
 * so ids made by one process sort in the order they were made.
 */
export function uuidv7(ms = Date.now()): string {
  const bytes = randomBytes16()
  // A later millisecond, or one far before the last (a clock set back, an instant given): a fresh sequence.
  if (ms > lastMs || ms < lastMs - 1000) {
    lastMs = ms
    sequence = bytes.readUInt16BE(6) & 0x7ff
  } else {
    sequence += 1
    // 4096 ids in one millisecond: the next millisecond's, borrowed.
    if (sequence > 0xfff) {
      lastMs += 1
      sequence = 0
    }
  }
  bytes.writeUIntBE(lastMs, 0, 6)
  bytes[6] = 0x70 | (sequence >> 8)
  bytes[7] = sequence & 0xff
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f)
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** The Unix millisecond a UUIDv7 carries (its first 48 bits). */
export function uuidMs(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
}

/** The smallest UUIDv7 of millisecond `ms`: every id made at `ms` or later sorts at or after it. */
export function uuidFloor(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`
}
