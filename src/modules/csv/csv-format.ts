import { Readable } from 'node:stream'
import { stringify } from 'csv-stringify/sync'
import type { FastifyReply } from 'fastify'
import { centsToAmount } from '../../shared/money.js'

/**
 * A spreadsheet reads a cell starting with one of these as a formula (or, for tab and CR, may shift it): such a cell
 * is written with a leading `'`, which a spreadsheet shows as text and the import takes off again. A cell that
 * already starts with `'` gets a second one, so that taking one off always gives the value back.
 */
const FORMULA_START = /^[=+\-@\t\r']/

/** A cell as written: text neutralised against formula injection, null as an empty cell. */
export function cell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return ''
  const text = String(value)
  return FORMULA_START.test(text) ? `'${text}` : text
}

/** A cell as read back: the one leading `'` an export adds taken off. */
export function uncell(text: string): string {
  return text.startsWith("'") ? text.slice(1) : text
}

/** An amount as the files write it: units with two decimals and a dot (`19.90`), whatever the sign. */
export function amount(cents: number | null | undefined): string {
  if (cents === null || cents === undefined) return ''
  return centsToAmount(Number(cents)).toFixed(2)
}

/**
 * A page's rows as text, TEXT_ROWS rows a string. A string of a whole page (a few hundred KB) would be one of V8's
 * large objects, which only a full collection frees: a million lines left the export's text behind in the heap
 * (+190 MiB). Strings of about 40 KB die young, in the scavenges.
 */
function* texts(rows: string[][]): Generator<string> {
  for (let i = 0; i < rows.length; i += TEXT_ROWS) yield stringify(rows.slice(i, i + TEXT_ROWS), CSV_OPTIONS)
}
const TEXT_ROWS = 200
const CSV_OPTIONS = { record_delimiter: '\r\n', quoted_match: ['\n', '\r'] }

/**
 * Sends `pages` (each an array of rows, each row already made of cells) as a CSV download: RFC 4180 quoting, UTF-8
 * with a byte order mark (so that spreadsheets read the accents), CRLF, a header row. Pages are read one at a time as
 * the client takes the bytes (backpressure), so memory stays bounded whatever the number of rows. A failure before the
 * first byte answers the usual error; after it, the status line is gone, so the connection is cut: the client sees an
 * incomplete download instead of a file that looks whole.
 */
export async function sendCsv(reply: FastifyReply, fileName: string, columns: readonly string[], pages: AsyncIterable<string[][]>): Promise<FastifyReply> {
  // The first page is read before anything is sent: a failure there is still an ordinary error answer.
  const iterator = pages[Symbol.asyncIterator]()
  const first = await iterator.next()
  // Each page is made into text by csv-stringify a slice at a time (a string per 200 rows rather than a stream event
  // per row: several times faster), and the next page is read only when the client has taken this one.
  const body = Readable.from(
    (async function* () {
      yield `\uFEFF${stringify([[...columns]], CSV_OPTIONS)}`
      if (first.done === true) return
      yield* texts(first.value)
      for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield* texts(next.value)
    })(),
    { objectMode: false, highWaterMark: 64 * 1024 },
  )
  reply.header('content-type', 'text/csv; charset=utf-8')
  reply.header('content-disposition', `attachment; filename="${fileName}"`)
  reply.header('cache-control', 'no-store')
  return reply.send(body)
}
