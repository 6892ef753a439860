import { spawn } from 'node:child_process'
import { expect, vi } from 'vitest'
import { freePort } from './server-process.js'

/**
 * Starts `npm run <script>` in `cwd` on a free port, waits for /health, runs `whileUp` against it, then sends SIGTERM
 * to npm alone (as a supervisor does: docker stop, systemd with KillMode=process, a PaaS) and checks that the
 * service shut down gracefully and that nothing npm started outlives it. Returns everything npm and the service wrote.
 */
export async function startAndStop(
  cwd: string,
  script: string,
  env: NodeJS.ProcessEnv,
  whileUp?: (base: string) => Promise<void>,
): Promise<{ output: string }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // A process group of its own, so that whatever npm starts can be found (and, if the test fails, ended).
  const npm = spawn('npm', ['run', script], { cwd, env: { ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const group = npm.pid as number
  let output = ''
  npm.stdout.on('data', (chunk) => (output += chunk))
  npm.stderr.on('data', (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)))
  const groupAlive = () => {
    try {
      process.kill(-group, 0)
      return true
    } catch {
      return false
    }
  }
  try {
    // A start that builds dist/ first, or runs under tsx, takes seconds.
    const health = await vi
      .waitFor(() => fetch(`${base}/health`), { timeout: 60_000, interval: 50 })
      .catch((error: unknown) => {
        throw new Error(`\`npm run ${script}\` did not answer on /health (${String(error)}):\n${output}`)
      })
    expect(health.status, output).toBe(200)
    if (whileUp) await whileUp(base)
    process.kill(group, 'SIGTERM')
    await exited
    await vi.waitFor(() => expect(groupAlive(), `a process of \`npm run ${script}\` outlived SIGTERM:\n${output}`).toBe(false), { timeout: 5000, interval: 50 })
    expect(output).toContain('shutting down')
    await expect(fetch(`${base}/health`)).rejects.toThrow()
    return { output }
  } finally {
    if (groupAlive()) process.kill(-group, 'SIGKILL')
  }
}
