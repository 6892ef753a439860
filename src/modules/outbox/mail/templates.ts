import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { EmailTemplate } from '../outbox.js'

/**
 * The e-mails' templates, files read at run time: `<name>.txt` (first line the subject, then a blank line, then
 * the plain text) and `<name>.html`. Next to this module when the build copied them, else in src/ of the project
 * (the same four levels up from src/modules/outbox/mail and dist/modules/outbox/mail).
 */
function templatesDir(): string {
  const here = dirname(fileURLToPath(import.meta.url))
  const candidates = [join(here, 'templates'), resolve(here, '../../../../src/modules/outbox/mail/templates')]
  return candidates.find((dir) => existsSync(join(dir, 'order-received.txt'))) ?? candidates[0]!
}

interface TemplateFiles {
  subject: string
  text: string
  html: string
}

const cache = new Map<EmailTemplate, TemplateFiles>()

/**
 * A line `{{> part}}` (its indentation and line end included) is replaced by the file `_part.<ext>` beside the
 * template: the order's lines, totals and address are written once for every e-mail about an order.
 */
function withPartials(dir: string, template: string, ext: 'html' | 'txt'): string {
  return template.replace(/[ \t]*\{\{> ([\w-]+)\}\}\n?/g, (_line, part: string) => readFileSync(join(dir, `_${part}.${ext}`), 'utf8'))
}

function loadTemplate(name: EmailTemplate): TemplateFiles {
  const cached = cache.get(name)
  if (cached) return cached
  const dir = templatesDir()
  const read = (file: string) => withPartials(dir, readFileSync(join(dir, file), 'utf8'), file.endsWith('.html') ? 'html' : 'txt')
  const [subject = '', ...rest] = read(`${name}.txt`).split('\n')
  const files = { subject: subject.trim(), text: rest.join('\n').replace(/^\n+/, ''), html: read(`${name}.html`) }
  cache.set(name, files)
  return files
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c)
}

function lookup(view: unknown, path: string): unknown {
  let value: unknown = view
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[key]
  }
  return value
}

/**
 * A tiny templating: `{{a.b}}` (escaped in HTML), `{{#each list}}…{{/each}}` (inside, names are the item's) and
 * `{{#if name}}…{{/if}}`. A block does not hold another of its own kind. A missing value is an empty string. One
 * pass: a value that itself looks like `{{…}}` is shown as it is, never expanded.
 */
export function render(template: string, view: unknown, html: boolean): string {
  const fill = (part: string, scope: unknown): string =>
    part.replace(
      /\{\{#each ([\w.]+)\}\}([\s\S]*?)\{\{\/each\}\}|\{\{#if ([\w.]+)\}\}([\s\S]*?)\{\{\/if\}\}|\{\{([\w.]+)\}\}/g,
      (_all, eachPath?: string, eachInner?: string, ifPath?: string, ifInner?: string, path?: string) => {
        if (eachPath !== undefined) {
          const list = lookup(scope, eachPath)
          return Array.isArray(list) ? list.map((item) => fill(eachInner ?? '', item)).join('') : ''
        }
        if (ifPath !== undefined) {
          const found = lookup(scope, ifPath)
          return found && !(Array.isArray(found) && found.length === 0) ? fill(ifInner ?? '', scope) : ''
        }
        const found = lookup(scope, path ?? '')
        const text = typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean' ? String(found) : ''
        return html ? escapeHtml(text) : text
      },
    )
  return fill(template, view)
}

export interface RenderedEmail {
  subject: string
  text: string
  html: string
}

/** The subject, text and HTML of one e-mail; `view` is what its templates show (mail/views.ts). */
export function renderEmail(name: EmailTemplate, view: unknown): RenderedEmail {
  const files = loadTemplate(name)
  return { subject: render(files.subject, view, false).replace(/[\r\n]+/g, ' '), text: render(files.text, view, false), html: render(files.html, view, true) }
}
