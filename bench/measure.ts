// Measuring windows: one load run against one server while its memory is watched, and the
// alternation (service, baseline, service, baseline …) that makes a noisy machine affect both alike.
import { type RunningServer, runLoad, watchMemory } from './processes.js'
import type { LoadSpec, Sample } from './types.js'

/** Runs `spec` against `server` and reports the load result with the server's peak memory. */
export async function measure(server: RunningServer, spec: Omit<LoadSpec, 'url'>): Promise<Sample> {
  const memory = watchMemory(server.pid)
  try {
    const result = await runLoad({ ...spec, url: server.origin })
    return { ...result, peakRssMiB: memory.stop() }
  } catch (error) {
    memory.stop()
    throw error
  }
}

export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/**
 * B over A on one figure, round by round (each B window over the A window of the same round), and the median of
 * those ratios. A round's two windows share the machine's state of that moment (what else runs on it, how warm it
 * is), which the ratio of two medians, each taken from other moments, does not share.
 */
export function pairedRatio(a: readonly Sample[], b: readonly Sample[], figure: (sample: Sample) => number | undefined): { ratio: number; rounds: number[] } {
  const rounds = b.map((sample, i) => (figure(sample) ?? Number.NaN) / (figure(a[i] as Sample) ?? Number.NaN))
  return { ratio: median(rounds), rounds }
}

/** The median of each figure over a scenario's rounds (peak memory: the highest). */
export interface Summary {
  rounds: number
  rps: number
  p50: number
  p99: number
  bytesPerResponse: number
  peakRssMiB: number
  requests: number
  non2xx: number
  errors: number
  ordersPerSecond?: number
}

export function summarize(samples: readonly Sample[]): Summary {
  const orders = samples.map((s) => s.ordersPerSecond).filter((v): v is number => v !== undefined)
  return {
    rounds: samples.length,
    rps: median(samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    bytesPerResponse: median(samples.map((s) => s.bytesPerResponse)),
    peakRssMiB: Math.max(...samples.map((s) => s.peakRssMiB)),
    requests: samples.reduce((sum, s) => sum + s.requests, 0),
    non2xx: samples.reduce((sum, s) => sum + s.non2xx, 0),
    errors: samples.reduce((sum, s) => sum + s.errors, 0),
    ...(orders.length > 0 ? { ordersPerSecond: median(orders) } : {}),
  }
}

/**
 * Measures each contender in turn, `rounds` times (A B A B …, or A B C A B C …), after one short
 * warm-up of each. Returns the samples per contender, in the order given. `counterbalanced`: every
 * other round runs them in the reverse order (A B, B A, A B …), so that neither always runs second.
 */
export async function alternate(
  contenders: readonly { run: (seconds: number) => Promise<Sample> }[],
  rounds: number,
  seconds: number,
  warmupSeconds: number,
  options: { counterbalanced?: boolean } = {},
): Promise<Sample[][]> {
  for (const contender of contenders) await contender.run(warmupSeconds)
  const samples: Sample[][] = contenders.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const order = [...contenders.keys()]
    if (options.counterbalanced === true && round % 2 === 1) order.reverse()
    for (const i of order) samples[i]?.push(await (contenders[i] as (typeof contenders)[number]).run(seconds))
  }
  return samples
}
