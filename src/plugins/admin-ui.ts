import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { AppError } from '../shared/errors.js'

export interface AdminUiOptions {
  /** The dashboard's build (index.html and assets/); admin/dist of the project by default. */
  root?: string
}

/** admin/dist of the project: this file is src/plugins/ under tsx and dist/plugins/ when compiled, both two levels down. */
export const DEFAULT_ADMIN_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../admin/dist')

/**
 * What the dashboard's pages may load: everything from this origin only, except images, which may also come from
 * wherever product images are stored (PUBLIC_URL/uploads, or an S3 bucket's public URL on another host, http or
 * https), and `data:` / `blob:` for the preview of an image before upload. Styles allow inline: the dashboard's
 * components (MUI, under react-admin) write their styles into <style> elements at run time; a style cannot run code.
 * Scripts come from this origin and nothing else, and no page may frame the dashboard.
 */
export const ADMIN_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const HASHED_ASSET_CACHE = 'public, max-age=31536000, immutable'
/** A path whose last segment has an extension asks for a file; anything else is a page of the dashboard. */
const FILE_PATH = /\.[^/]*$/

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('Content-Security-Policy', ADMIN_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .header('X-Frame-Options', 'DENY')
}

/**
 * Serves the admin dashboard's build at /admin: its files, and index.html for every other path under /admin
 * (the dashboard routes in the browser). /admin/api/* stays the API's: a route there wins over the wildcard, and an
 * unknown one is the usual JSON 404. Without a build, /admin answers 503 saying how to make one.
 */
export default async function adminUiPlugin(app: FastifyInstance, options: AdminUiOptions = {}): Promise<void> {
  const root = options.root ?? DEFAULT_ADMIN_ROOT
  const indexFile = join(root, 'index.html')
  if (!existsSync(indexFile))
    app.log.warn(`the admin dashboard is not built (${indexFile} is missing): /admin answers 503 until \`npm run build:admin\` is run`)

  // Only reply.sendFile (no routes of its own); dot-files are never served.
  await app.register(fastifyStatic, { root, serve: false, dotfiles: 'ignore', cacheControl: false, suppressWarning: true })

  const sendIndex = (reply: FastifyReply) => {
    // Checked on each request, so a build made while the service runs is served without a restart.
    if (!existsSync(indexFile)) throw new AppError(503, 'adminNotBuilt')
    return securityHeaders(reply).header('Cache-Control', 'no-cache').sendFile('index.html')
  }

  const hide = { hide: true }
  app.get('/admin', { schema: hide }, async (_request, reply) => sendIndex(reply))
  app.get('/admin/*', { schema: hide }, async (request, reply) => {
    const path = (request.params as { '*': string })['*']
    if (path === 'api' || path.startsWith('api/')) return reply.callNotFound()
    if (path === '' || !FILE_PATH.test(path)) return sendIndex(reply)
    // Vite puts content-hashed names under assets/: they never change. Any other file (favicon.ico) may.
    const cacheControl = path.startsWith('assets/') ? HASHED_ASSET_CACHE : 'no-cache'
    return securityHeaders(reply).header('Cache-Control', cacheControl).sendFile(path)
  })
}
