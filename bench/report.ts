// The results as a Markdown table (printed, and kept in the JSON) and the machine they ran on.
import { readFileSync } from 'node:fs'
import os from 'node:os'
import type { ScenarioResult } from './scenarios.js'
import type { DbKind } from './types.js'

export interface Machine {
  cpu: string
  cores: number
  memoryGiB: number
  os: string
  node: string
}

export function describeMachine(): Machine {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  }
}

function cpuTimes(): { idle: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const values = line.trim().split(/\s+/).slice(1).map(Number)
  const idle = (values[3] ?? 0) + (values[4] ?? 0)
  return { idle, total: values.reduce((a, b) => a + b, 0) }
}

/**
 * How busy the machine is with work that is not the benchmark's: the share of CPU in use over
 * one second while the benchmark itself is idle.
 */
export async function measureBackgroundLoad(): Promise<number> {
  const start = cpuTimes()
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const end = cpuTimes()
  const total = end.total - start.total
  return total > 0 ? 1 - (end.idle - start.idle) / total : 0
}

export interface DatabaseRun {
  db: DbKind
  startedAt: string
  seconds: number
  /** CPU in use by others right before this database's run, 0..1. */
  backgroundLoad: number
  scenarios: ScenarioResult[]
}

const integer = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '–')
const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '–')

const DB_NAMES: Record<DbKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

export function renderMarkdown(runs: readonly DatabaseRun[], machine: Machine, command: string): string {
  const out: string[] = []
  out.push(`Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}. Command: \`${command}\`.`)
  for (const run of runs) {
    out.push('')
    out.push(
      `#### ${DB_NAMES[run.db]} — ${run.startedAt}, ${Math.round(run.seconds)} s, background CPU load before the run ${Math.round(run.backgroundLoad * 100)} %`,
    )
    // A scenario measured in targets and notes alone (csv) has no row.
    const rows = run.scenarios.flatMap((scenario) => scenario.rows)
    if (rows.length > 0) {
      out.push('')
      out.push('| Scenario | Server | req/s | p50 ms | p99 ms | bytes/resp | peak RSS MiB | Compared |')
      out.push('|---|---|---:|---:|---:|---:|---:|---|')
    }
    for (const row of rows) {
      const s = row.summary
      out.push(
        `| ${row.scenario} | ${row.server} | ${integer(s.rps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${integer(s.bytesPerResponse)} | ${integer(s.peakRssMiB)} | ${row.versus} |`,
      )
    }
    const targets = run.scenarios.flatMap((s) => s.targets)
    if (targets.length > 0) {
      out.push('')
      out.push('| Target | Goal | Measured | Met |')
      out.push('|---|---|---:|:---:|')
      for (const t of targets) out.push(`| ${t.scenario} | ${t.target} | ${t.measured} | ${t.met ? 'yes' : '**no**'} |`)
    }
    const notes = run.scenarios.flatMap((s) => s.notes)
    if (notes.length > 0) {
      out.push('')
      for (const note of notes) out.push(`- ${note}`)
    }
  }
  return out.join('\n')
}
