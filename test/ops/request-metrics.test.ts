import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { RequestStats } from '../../src/plugins/request-metrics.js'

// The requests' metrics are kept in plain numbers (src/plugins/request-metrics.ts) instead of prom-client's Counter
// and Histogram, for speed: what Prometheus reads must be exactly what prom-client's own would have written.

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const names = {
  counter: 'http_requests_total',
  counterHelp: 'HTTP requests answered',
  histogram: 'http_request_duration_seconds',
  histogramHelp: 'Time to answer',
}

describe('the request metrics', () => {
  it("expose the same lines as prom-client's Counter and Histogram given the same requests", async () => {
    const ours = new Registry()
    const stats = new RequestStats(BOUNDS)
    stats.register(ours, names)

    const theirs = new Registry()
    const labelNames = ['method', 'route', 'status_code'] as const
    const counter = new Counter({ name: names.counter, help: names.counterHelp, labelNames, registers: [theirs] })
    const histogram = new Histogram({ name: names.histogram, help: names.histogramHelp, labelNames, buckets: BOUNDS, registers: [theirs] })

    // On a bound, between bounds, above the last one, zero; three series.
    const requests: [string, string, number, number][] = [
      ['GET', '/products/:id', 200, 0.001],
      ['GET', '/products/:id', 200, 0.0007],
      ['GET', '/products/:id', 200, 0.003],
      ['GET', '/products/:id', 404, 0.0025],
      ['POST', '/orders', 201, 0.04],
      ['POST', '/orders', 201, 12],
      ['POST', '/orders', 201, 0],
      ['GET', '(unmatched)', 404, 0.2],
    ]
    for (const [method, route, status, seconds] of requests) {
      stats.record(method, route, status, seconds)
      counter.inc({ method, route, status_code: status })
      histogram.observe({ method, route, status_code: status }, seconds)
    }
    const text = await ours.metrics()
    expect(text).toBe(await theirs.metrics())
    expect(text).toContain('http_request_duration_seconds_bucket{le="0.001",method="GET",route="/products/:id",status_code="200"} 2')
    expect(text).toContain('http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/orders",status_code="201"} 3')
    expect(text).toContain('http_requests_total{method="GET",route="/products/:id",status_code="200"} 3')
    // JSON too (what getMetricsAsJSON hands other tools), and a reset empties both.
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON())
    ours.resetMetrics()
    theirs.resetMetrics()
    expect(await ours.metrics()).toBe(await theirs.metrics())
  })
})
