import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** OpenAPI 3.1 generated from the route schemas, at /openapi.json, and an interactive page at /docs. */
async function docsPlugin(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Shop API', version: '1.0.0', description: 'HTTP backend for an online shop.' },
      // Relative: "Try it out" calls whatever address the page was opened at (PUBLIC_URL, an internal
      // name, localhost through a tunnel), not only PUBLIC_URL. Absolute URLs in answers still use it.
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export default fp(docsPlugin, { name: 'docs' })
