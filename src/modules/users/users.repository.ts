import type { Kysely } from 'kysely'
import type { Database, NewUserRow, UserRow, UserUpdate } from '../../db/database.js'

type Db = Kysely<Database>

export async function findUserAuthState(db: Db, id: number) {
  return db.selectFrom('users').select(['id', 'credentials_changed_at']).where('id', '=', id).executeTakeFirst()
}

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst()
}

export async function insertUser(db: Db, user: NewUserRow): Promise<UserRow> {
  return db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow()
}

export async function updateUserById(db: Db, id: number, changes: UserUpdate): Promise<UserRow | undefined> {
  return db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst()
}

export async function deleteUserById(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function listUsers(db: Db, page: { limit: number; offset: number }): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().orderBy('id').limit(page.limit).offset(page.offset).execute()
}

/** How many users there are (X-Total-Count of the list). */
export async function countUsers(db: Db): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
