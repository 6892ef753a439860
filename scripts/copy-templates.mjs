// Part of `npm run build`: the e-mail templates (read at run time) go next to the compiled module, so that dist/
// works on its own, without src/.
import { cpSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
cpSync(join(root, 'src/modules/outbox/mail/templates'), join(root, 'dist/modules/outbox/mail/templates'), { recursive: true })
