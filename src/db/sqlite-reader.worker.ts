// A reader thread of sqlite-readers.ts: its own read-only connection to the SQLite file, running the compiled
// queries it is sent, one at a time.
import { parentPort, workerData } from 'node:worker_threads'
import { openSqlite } from './sqlite-connection.js'
import type { FromReader, ToReader } from './sqlite-readers.js'

const database = openSqlite((workerData as { file: string }).file, 'reader')

parentPort?.on('message', ({ id, sql, parameters }: ToReader) => {
  let answer: FromReader
  try {
    const statement = database.prepare(sql)
    if (!statement.reader) throw Object.assign(new Error('A reader thread runs only statements that return rows'), { code: 'SQLITE_READONLY' })
    answer = { id, rows: statement.all(...parameters) }
  } catch (error) {
    answer = { id, error: { message: error instanceof Error ? error.message : String(error), code: (error as { code?: string }).code } }
  }
  parentPort?.postMessage(answer)
})
