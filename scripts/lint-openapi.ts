// `npm run lint:openapi`: the service's OpenAPI document, as /openapi.json serves it, linted by Redocly CLI with
// the rules in redocly.yaml. Errors fail (CI runs it); warnings are printed.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openApiDocument } from './openapi-types.js'

const dir = mkdtempSync(join(tmpdir(), 'shop-openapi-lint-'))
try {
  const file = join(dir, 'openapi.json')
  // Indented, so that each problem's line and column point at something readable.
  writeFileSync(file, JSON.stringify(JSON.parse(await openApiDocument()), null, 2))
  const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js')
  const config = fileURLToPath(new URL('../redocly.yaml', import.meta.url))
  const run = spawnSync(process.execPath, [cli, 'lint', '--config', config, file], {
    stdio: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  process.exitCode = run.status ?? 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
