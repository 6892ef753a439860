import { unwrap } from './answers'
import type { Api } from './resource'
import type { operations } from './schema'

/** POST /imports/products's answer: the counts and each row's error. */
export type ImportReport = operations['importProductsCsv']['responses'][200]['content']['application/json']

export const EXPORTS = [
  { path: '/exports/products.csv', label: 'Products', description: 'a row per variant', permission: 'catalog:read' },
  { path: '/exports/orders.csv', label: 'Orders', description: 'a row per order line', permission: 'orders:read' },
  { path: '/exports/customers.csv', label: 'Customers', description: 'a row per customer, with orders and total spent', permission: 'customers:read' },
] as const
export type ExportPath = (typeof EXPORTS)[number]['path']

/**
 * Downloads an export: the file is read with the session's token (a plain link could not send it), then handed to
 * the browser as a download under the name the API gives it.
 */
export async function downloadExport(api: Api, path: ExportPath): Promise<string> {
  const result = await api.GET(path, { parseAs: 'blob' })
  const blob = unwrap(result as { data?: Blob; error?: unknown; response: Response })
  const disposition = result.response.headers.get('content-disposition') ?? ''
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? path.slice(path.lastIndexOf('/') + 1)
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
  return name
}

/** POST /imports/products with the file, as a dry run or for real, all or nothing unless `partial`. */
export async function importProducts(api: Api, file: File, options: { dryRun: boolean; partial: boolean }): Promise<ImportReport> {
  const form = (body: { file?: Blob }) => {
    const data = new FormData()
    if (body.file) data.append('file', body.file, file.name)
    return data
  }
  const result = await api.POST('/imports/products', {
    params: { query: { dryRun: options.dryRun, partial: options.partial } },
    body: { file } as never,
    bodySerializer: form as never,
  })
  return unwrap(result, ['file'])
}
