import { type Compilable, CompiledQuery, type Kysely, type QueryResult } from 'kysely'
import type { Database } from './database.js'

/**
 * PostgreSQL: the text of every statement compiled by `prepared`, with the name it is prepared under. The pool's
 * guard (`guardPool`, availability.ts) sends these texts as named statements: each connection parses and plans one
 * once, then only binds and runs it (and the text is not sent again). Only these: their number is fixed by the code,
 * where a name per text of the other queries (lists of any length) would grow without bound.
 */
export const preparedStatementNames = new Map<string, string>()

/** Marks a stand-in (no literal in the code starts with a NUL character). */
const STAND_IN = '\u0000prepared:'

/**
 * A statement of a fixed shape, built and compiled once per dialect, then run with each call's values.
 *
 * Building a query with Kysely (immutable nodes, then the compiler's walk) costs more than SQLite takes to run a
 * small statement, so the paths that run per order or per cart change (checkout, add to cart, the cart view) keep
 * their statements compiled. `build` gets a stand-in for every value and must use each one only as a value of the
 * statement (a parameter): a stand-in used to choose the statement's shape (an `if`, a list's length, a
 * computation) would be a silent bug, so run() throws when a compiled parameter is a stand-in it does not know.
 * Every other parameter the builder made (a literal such as `'active'`) is kept as compiled. On PostgreSQL the
 * statement is also prepared by name on each connection (see preparedStatementNames).
 */
export function prepared<V extends object, R>(build: (db: Kysely<Database>, values: V) => Compilable<R>) {
  const compiled = new Map<unknown, CompiledQuery<R>>()
  const standIns = new Proxy({} as V, { get: (_, name) => `${STAND_IN}${String(name)}` })

  function compile(db: Kysely<Database>): CompiledQuery<R> {
    // One compiled form per dialect (a transaction shares its database's adapter).
    const dialect = db.getExecutor().adapter.constructor
    let query = compiled.get(dialect)
    if (!query) {
      query = build(db, standIns).compile()
      compiled.set(dialect, query)
      if (!preparedStatementNames.has(query.sql)) preparedStatementNames.set(query.sql, `shop_${preparedStatementNames.size + 1}`)
    }
    return query
  }

  return async function run(db: Kysely<Database>, values: V): Promise<QueryResult<R>> {
    const query = compile(db)
    const parameters = query.parameters.map((parameter) => {
      if (typeof parameter !== 'string' || !parameter.startsWith(STAND_IN)) return parameter
      const name = parameter.slice(STAND_IN.length)
      if (!(name in values)) throw new Error(`prepared statement: no value for ${name}`)
      return (values as Record<string, unknown>)[name]
    })
    return db.executeQuery(CompiledQuery.raw(query.sql, parameters))
  }
}

/**
 * A statement over a list of rows (a multi-row `INSERT`), compiled once per number of rows (up to `upTo`) and set of
 * columns with `prepared`, so on PostgreSQL prepared by name too (a bounded number of names: the columns are the
 * code's). Each row's value of each column is a parameter; `build` must use the rows' values only as values, as for
 * `prepared`. Rows are built each time, as Kysely does, when there are more than `upTo`, when they do not all have
 * the first row's columns, or when a value is `undefined` (Kysely leaves such a column out of the row).
 */
export function preparedRows<Row extends object, R>(build: (db: Kysely<Database>, rows: readonly Row[]) => Compilable<R>, upTo: number) {
  const statements = new Map<string, (db: Kysely<Database>, values: Record<string, unknown>) => Promise<QueryResult<R>>>()

  function statementFor(count: number, columns: readonly string[]) {
    const key = `${count}:${columns.join(',')}`
    let statement = statements.get(key)
    if (!statement) {
      statement = prepared((db, v: Record<string, unknown>) =>
        build(
          db,
          Array.from({ length: count }, (_, i) => Object.fromEntries(columns.map((column) => [column, v[`${i}.${column}`]])) as Row),
        ),
      )
      statements.set(key, statement)
    }
    return statement
  }

  return async function run(db: Kysely<Database>, rows: readonly Row[]): Promise<QueryResult<R>> {
    const columns = rows.length > 0 && rows.length <= upTo ? Object.keys(rows[0]!) : undefined
    const values: Record<string, unknown> = {}
    const uniform =
      columns !== undefined &&
      rows.every((row, i) => {
        const entries = Object.entries(row)
        if (entries.length !== columns.length) return false
        for (const [column, value] of entries) {
          if (value === undefined) return false
          values[`${i}.${column}`] = value
        }
        return columns.every((column) => `${i}.${column}` in values)
      })
    if (!uniform) return db.executeQuery(build(db, rows))
    return statementFor(rows.length, columns)(db, values)
  }
}

/**
 * A statement over a list of values (an `IN` list), compiled once per length of the list (up to `upTo`) with
 * `prepared`, so on PostgreSQL prepared by name too (a bounded number of names). `build` gets the list, each item a
 * stand-in, and the call's other values, which must be used only as values, as for `prepared`. A longer list is built
 * each time, as Kysely does.
 */
export function preparedList<Item, V extends object, R>(build: (db: Kysely<Database>, items: readonly Item[], values: V) => Compilable<R>, upTo: number) {
  const statements = new Map<number, (db: Kysely<Database>, values: Record<string, unknown>) => Promise<QueryResult<R>>>()

  function statementFor(count: number) {
    let statement = statements.get(count)
    if (!statement) {
      statement = prepared((db, v: Record<string, unknown>) =>
        build(
          db,
          Array.from({ length: count }, (_, i) => v[`#${i}`] as Item),
          v as V,
        ),
      )
      statements.set(count, statement)
    }
    return statement
  }

  return async function run(db: Kysely<Database>, items: readonly Item[], values: V): Promise<QueryResult<R>> {
    if (items.length > upTo) return db.executeQuery(build(db, items, values))
    // The items under keys no value of V can have (`#0`, `#1`…).
    const all: Record<string, unknown> = { ...(values as Record<string, unknown>) }
    for (let i = 0; i < items.length; i++) all[`#${i}`] = items[i]
    return statementFor(items.length)(db, all)
  }
}
