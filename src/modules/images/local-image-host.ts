import { createWriteStream } from 'node:fs'
import { mkdir, opendir, rm, stat } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { ImageHost } from './image-host.js'
import { ImageKeyTakenError } from './image-key-taken.js'

/** Files under `uploadDir`, served by the service itself at `<publicUrl>/uploads/<key>`. */
export function createLocalImageHost(uploadDir: string, publicUrl: string): ImageHost {
  const root = resolve(uploadDir)
  const pathOf = (key: string): string => {
    const path = resolve(root, key)
    if (!path.startsWith(root + sep)) throw new Error(`Image key outside the upload directory: ${key}`)
    return path
  }
  return {
    async store(key, body: Readable) {
      const path = pathOf(key)
      await mkdir(dirname(path), { recursive: true })
      // 'wx' fails when the file exists: two uploads never overwrite each other.
      const out = createWriteStream(path, { flags: 'wx' })
      try {
        await pipeline(body, out)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new ImageKeyTakenError(key)
        await rm(path, { force: true })
        throw error
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true })
    },
    publicUrl(key) {
      return `${publicUrl}/uploads/${key.split('/').map(encodeURIComponent).join('/')}`
    },
    async *list(prefix) {
      // Keys are `<folder>/<name>`: the files of one folder, no deeper.
      const folder = prefix.slice(0, prefix.lastIndexOf('/'))
      const dir = resolve(root, folder)
      if (!dir.startsWith(root + sep)) throw new Error(`Image prefix outside the upload directory: ${prefix}`)
      const entries = await opendir(dir).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return null
        throw error
      })
      if (!entries) return
      for await (const entry of entries) {
        if (!entry.isFile()) continue
        const key = `${folder}/${entry.name}`
        if (!key.startsWith(prefix)) continue
        // A file removed since the directory was read is simply no longer there.
        const info = await stat(join(dir, entry.name)).catch(() => null)
        if (info) yield { key, size: info.size, lastModified: info.mtime }
      }
    },
  }
}

/** The file of `key` under `uploadDir` (for serving). */
export function localImagePath(uploadDir: string, key: string): string {
  return join(resolve(uploadDir), key)
}
