import 'dotenv/config'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'

let config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message)
    process.exit(1)
  }
  throw error
}

const app = await buildApp(config)

// SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the database.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an uncaught error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
})

await app.listen({ port: config.port, host: config.host })
