import { type Kysely, Migrator, sql } from 'kysely'
import { afterAll, beforeAll } from 'vitest'
import { migrations } from '../../src/db/migrate.js'
import { openTestDatabase } from './app.js'

// What the tests of one migration share: a database of the file's own with a Migrator over the project's migrations,
// the migration before a given one (the shop as it was), and the schema as the database describes it, to compare
// before a migration's `up` and after its `down`.

// Rows of tables the typed schema may not have yet.
export type Row = Record<string, any>

/** The migration just before `name` in the project's list: the schema a shop had before it. */
export function migrationBefore(name: string): string {
  const names = Object.keys(migrations)
  const index = names.indexOf(name)
  if (index < 1) throw new Error(`no migration before ${name}`)
  return names[index - 1]!
}

export interface MigrationDatabase {
  opened: Awaited<ReturnType<typeof openTestDatabase>>
  /** The database untyped: a migration test writes rows of schemas before the current one. */
  raw: Kysely<any>
  migrator: Migrator
  isPg: boolean
  /** The names of the migrations applied, in order. */
  applied(): Promise<string[]>
  /** Tables, columns, indexes, constraints, triggers (and PostgreSQL's functions and sequences), in a stable order. */
  schemaOf(): Promise<Row[]>
}

/** A test database for the file, opened before its tests and dropped after them; its fields are set in `beforeAll`. */
export function useMigrationDatabase(): MigrationDatabase {
  const used = {
    async applied() {
      return (await used.migrator.getMigrations()).filter((m) => m.executedAt !== undefined).map((m) => m.name)
    },
    schemaOf: () => schemaOf(used.raw, used.isPg, used.opened.handle.schema),
  } as MigrationDatabase
  beforeAll(async () => {
    used.opened = await openTestDatabase()
    used.raw = used.opened.handle.db as unknown as Kysely<any>
    used.isPg = used.opened.handle.dialect === 'postgres'
    const schema = used.opened.handle.schema
    used.migrator = new Migrator({ db: used.raw, provider: { getMigrations: async () => migrations }, ...(schema ? { migrationTableSchema: schema } : {}) })
  })
  afterAll(async () => {
    await used.opened?.drop()
  })
  return used
}

async function schemaOf(db: Kysely<any>, isPg: boolean, schema = 'public'): Promise<Row[]> {
  if (!isPg) {
    const { rows } = await sql<Row>`select type, name, tbl_name, sql from sqlite_master
      where name not like 'kysely%' and name <> 'sqlite_sequence' order by type, name`.execute(db)
    // A table SQLite rebuilt by hand reads as written by hand: compare what it says, not how it is spelled.
    return rows.map((row) => ({
      ...row,
      sql:
        typeof row.sql === 'string'
          ? row.sql
              .toLowerCase()
              .replaceAll('"', '')
              .replace(/\s+/g, ' ')
              .replace(/ ?\( ?/g, '(')
              .replace(/ ?\) ?/g, ')')
          : null,
    }))
  }
  const queries = [
    sql<Row>`select 'column' as kind, table_name as name, column_name as detail, data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as def
      from information_schema.columns where table_schema = ${schema} and table_name not like 'kysely%'`,
    sql<Row>`select 'index' as kind, tablename as name, indexname as detail, indexdef as def from pg_indexes
      where schemaname = ${schema} and tablename not like 'kysely%'`,
    sql<Row>`select 'constraint' as kind, c.relname as name, k.conname as detail, pg_get_constraintdef(k.oid) as def
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relname not like 'kysely%'`,
    sql<Row>`select 'trigger' as kind, c.relname as name, t.tgname as detail, pg_get_triggerdef(t.oid) as def
      from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and not t.tgisinternal`,
    sql<Row>`select 'function' as kind, p.proname as name, '' as detail, p.prosrc as def
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${schema}`,
    sql<Row>`select 'sequence' as kind, sequence_name as name, '' as detail, '' as def
      from information_schema.sequences where sequence_schema = ${schema} and sequence_name not like 'kysely%'`,
  ]
  const rows: Row[] = []
  for (const query of queries) rows.push(...(await query.execute(db)).rows)
  const order = (row: Row) => `${row.kind}\u0000${row.name}\u0000${row.detail}`
  return rows.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))
}
