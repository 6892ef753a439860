// Peak RSS of the service while it takes 10 concurrent 5 MiB image uploads (and 10 oversize ones,
// which must be cut off at the limit rather than held in memory).
//   npx tsx bench/catalog-upload-memory.ts
// The service runs in a child process so the client's buffers do not count.
import { randomBytes } from 'node:crypto'
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const MiB = 1024 * 1024

async function serve(): Promise<void> {
  const { buildApp } = await import('../src/app.js')
  const { loadConfig } = await import('../src/config.js')
  const { createUser } = await import('../src/modules/users/users.service.js')
  const dir = mkdtempSync(join(tmpdir(), 'shop-bench-upload-'))
  const config = loadConfig({ NODE_ENV: 'production', JWT_SECRET: randomBytes(32).toString('base64'), DATA_DIR: dir, LOG_LEVEL: 'silent' })
  const app = await buildApp(config, { logger: false })
  const admin = await createUser(app.db, { name: 'Bench', email: 'bench@shop.test', password: 'secret123', role: 'admin' }, null)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  let peak = 0
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }
  const timer = setInterval(sample, 2)
  global.gc?.()
  sample()
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0, token: app.signToken(admin), rss: process.memoryUsage.rss() })
  process.on('message', (message: { cmd: string }) => {
    if (message.cmd === 'reset') {
      global.gc?.()
      peak = process.memoryUsage.rss()
      process.send?.({ reset: true, rss: peak })
    } else if (message.cmd === 'peak') {
      sample()
      process.send?.({ peak })
    } else if (message.cmd === 'stop') {
      clearInterval(timer)
      void app.close().then(() => {
        rmSync(dir, { recursive: true, force: true })
        process.exit(0)
      })
    }
  })
}

function body(size: number): { payload: Blob; type: string } {
  const boundary = '----bench' + Date.now()
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nBench\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="price"\r\n\r\n9.99\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const all = Buffer.concat([head, Buffer.alloc(size, 0xab), tail])
  return { payload: new Blob([new Uint8Array(all)]), type: `multipart/form-data; boundary=${boundary}` }
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ['serve'], { execArgv: ['--import', 'tsx', '--expose-gc'] })
  const next = () => new Promise<any>((resolve) => child.once('message', resolve))
  const { port, token, rss } = await next()
  const url = `http://127.0.0.1:${port}/products`
  console.log(`service RSS at rest: ${(rss / MiB).toFixed(1)} MiB`)
  for (const [label, size, expected] of [
    ['10 concurrent uploads of 5 MiB (accepted)', 5 * MiB, 201],
    ['10 concurrent uploads of 20 MiB (cut off at 5 MiB, 500)', 20 * MiB, 500],
  ] as const) {
    const { payload, type } = body(size)
    // Warm-up: one request, so code paths are loaded before we measure.
    await fetch(url, { method: 'POST', headers: { 'content-type': type, authorization: `Bearer ${token}` }, body: payload }).then((r) => r.arrayBuffer())
    child.send({ cmd: 'reset' })
    const { rss: before } = await next()
    const t0 = performance.now()
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(url, { method: 'POST', headers: { 'content-type': type, authorization: `Bearer ${token}` }, body: payload }).then(async (r) => {
          await r.arrayBuffer()
          return r.status
        }),
      ),
    )
    const ms = performance.now() - t0
    child.send({ cmd: 'peak' })
    const { peak } = await next()
    if (statuses.some((s) => s !== expected)) throw new Error(`unexpected statuses ${statuses.join(',')}`)
    console.log(
      `${label}: RSS before ${(before / MiB).toFixed(1)} MiB, peak ${(peak / MiB).toFixed(1)} MiB (+${((peak - before) / MiB).toFixed(1)} MiB) in ${ms.toFixed(0)} ms`,
    )
  }
  child.send({ cmd: 'stop' })
}

if (process.argv[2] === 'serve') await serve()
else await main()
