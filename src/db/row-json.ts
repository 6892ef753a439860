import { type RawBuilder, sql } from 'kysely'

/**
 * Every column of a table, each named once: written `{ id: true, … } satisfies AllColumns<SomeTable>`, so that a
 * column added to the table and not to the list (or a name the table lacks) fails to compile.
 */
export type AllColumns<Table> = Record<keyof Table & string, true>

/**
 * One row of a subquery as a single value of a select list, on either database: `json_build_object` of its columns
 * on PostgreSQL (the driver parses it), `json_object` on SQLite (which answers the text: read it with
 * `parseRowJson`). Each column keeps its type (numbers stay numbers, text stays text), as a plain select reads it.
 * Used to read a row beside another in one statement: `(select ${rowJson(...)} from t alias where …)`.
 * `alias` and the column names are the code's, never input.
 */
export function rowJson<Row>(postgres: boolean, alias: string, columns: Record<string, true>): RawBuilder<Row | string | null> {
  const pairs = Object.keys(columns).map((column) => `'${column}', ${alias}."${column}"`)
  return sql.raw(`${postgres ? 'json_build_object' : 'json_object'}(${pairs.join(', ')})`)
}

/** A `rowJson` value as read: the row (SQLite's text parsed), or null when the subquery found none. */
export function parseRowJson<Row>(value: Row | string | null | undefined): Row | null {
  if (value === null || value === undefined) return null
  return typeof value === 'string' ? (JSON.parse(value) as Row) : value
}
