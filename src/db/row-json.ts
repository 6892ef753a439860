import { type RawBuilder, sql } from 'kysely'

/**
 * Every column of a table, each named once: written `{ id: true, … } satisfies AllColumns<SomeTable>`, so that a
 * column added to the table and not to the list (or a name the table lacks) fails to compile.
 */
export type AllColumns<Table> = Record<keyof Table & string, true>

/**
 * The row `alias` names, as one value of a select list, on either database: `row_to_json` on PostgreSQL (the driver
 * parses it), `json_object` of `columns` on SQLite (which has no row-to-JSON, and answers the text: read it with
 * `parseRowJson`). `columns` must be every column `alias` has, so that both answer the same object: a table's
 * (`AllColumns` checks the list against its type), or a derived table's select list. Each column keeps its type
 * (numbers stay numbers, text stays text), as a plain select reads it. Used to read a row beside another in one
 * statement: `(select ${rowJson(...)} from t alias where …)`. `alias` and the column names are the code's, never
 * input.
 */
export function rowJson(postgres: boolean, alias: string, columns: Record<string, true>): RawBuilder<unknown> {
  if (postgres) return sql.raw(`row_to_json(${alias})`)
  const pairs = Object.keys(columns).map((column) => `'${column}', ${alias}."${column}"`)
  return sql.raw(`json_object(${pairs.join(', ')})`)
}

/** A `rowJson` value as read: the row (SQLite's text parsed), or null when the subquery found none. */
export function parseRowJson<Row>(value: Row | string | null | undefined): Row | null {
  if (value === null || value === undefined) return null
  return typeof value === 'string' ? (JSON.parse(value) as Row) : value
}
