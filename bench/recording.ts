// Records what the service answers, so the baseline can answer the same bytes.
import http from 'node:http'
import type { RequestSpec } from './types.js'

/** One recorded response; `key` is requestKey() of the request that produced it. */
export interface Recording {
  key: string
  status: number
  /** Flat [name, value, name, value, …] as the service sent them, minus the ones node adds itself. */
  rawHeaders: string[]
  bodyBase64: string
}

/** Requests differ by method, URL and caller (the cart is per customer). */
export function requestKey(method: string, url: string, authorization: string | undefined): string {
  return `${method} ${url} ${authorization ?? ''}`
}

// node:http writes these itself on every response; copying them would duplicate them.
const NODE_OWN_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])

export interface RawResponse {
  status: number
  rawHeaders: string[]
  body: Buffer
}

/** One request to `origin`, keeping the headers exactly as sent (case and order). */
export function sendRequest(origin: string, spec: RequestSpec): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(new URL(spec.path, origin), { method: spec.method, headers: spec.headers ?? {}, agent: false }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, rawHeaders: response.rawHeaders, body: Buffer.concat(chunks) }))
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(spec.body)
  })
}

/** Sends every request once (a few at a time) and records the answers; throws on any non-2xx. */
export async function recordResponses(origin: string, specs: readonly RequestSpec[]): Promise<Recording[]> {
  const recordings: Recording[] = []
  const queue = [...specs]
  const worker = async (): Promise<void> => {
    for (let spec = queue.shift(); spec; spec = queue.shift()) {
      const response = await sendRequest(origin, spec)
      if (response.status < 200 || response.status > 299) {
        throw new Error(`recording ${spec.method} ${spec.path}: status ${response.status}: ${response.body.toString().slice(0, 200)}`)
      }
      const rawHeaders: string[] = []
      for (let i = 0; i < response.rawHeaders.length; i += 2) {
        const name = response.rawHeaders[i] as string
        if (!NODE_OWN_HEADERS.has(name.toLowerCase())) rawHeaders.push(name, response.rawHeaders[i + 1] as string)
      }
      if (response.body.length > 0 && !rawHeaders.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'content-length')) {
        rawHeaders.push('content-length', String(response.body.length))
      }
      recordings.push({
        key: requestKey(spec.method, spec.path, spec.headers?.authorization),
        status: response.status,
        rawHeaders,
        bodyBase64: response.body.toString('base64'),
      })
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return recordings
}
