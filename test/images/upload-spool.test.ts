import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestApp } from '../helpers/app.js'
import { multipart, pngPart, storedImages } from '../helpers/catalog.js'
import { bearer, makeUser } from '../helpers/factories.js'
import { createLoggedApp, type LogLine } from '../helpers/outage.js'

// Where an upload is spooled while it streams in (UPLOAD_TMP_DIR, by default <DATA_DIR>/tmp), and
// what the client hears when the server cannot write it there: a 500, never a blamed client.

let cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  cleanups = []
})

const IMAGE_1MB = { filename: 'big.jpg', type: 'image/jpeg', data: Buffer.alloc(1024 * 1024, 9) }

async function upload(t: Awaited<ReturnType<typeof createLoggedApp>>, files = [pngPart()]) {
  const admin = await makeUser(t.app, 'admin')
  const form = await multipart({ name: 'Lleno', price: '1' }, files)
  return t.app.inject({ method: 'POST', url: '/products', headers: { ...form.headers, ...bearer(admin) }, payload: form.payload })
}

const spoolErrors = (lines: LogLine[]) => lines.filter((l) => l.msg === 'could not spool an uploaded image to UPLOAD_TMP_DIR')

/** Mounts a tmpfs of `size` at `dir`: a disk that really fills up. Needs root (and a kernel that allows it). */
function mountSmallDisk(dir: string, size: string): boolean {
  if (process.getuid?.() !== 0) return false
  return spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]).status === 0
}

/** Whether this process may mount a tmpfs: tried once on a scratch folder, unmounted at once. */
function canMountSmallDisk(): boolean {
  const probe = mkdtempSync(join(tmpdir(), 'shop-mount-probe-'))
  const mounted = mountSmallDisk(probe, '64k')
  if (mounted) spawnSync('umount', [probe])
  rmSync(probe, { recursive: true, force: true })
  return mounted
}

describe('upload spool', () => {
  it('is <DATA_DIR>/tmp by default, created at start, and left empty after an upload', async () => {
    const t = await createLoggedApp({})
    cleanups.push(t.close)
    expect(t.config.uploadTmpDir).toBe(join(t.config.dataDir, 'tmp'))
    expect(readdirSync(t.config.uploadTmpDir)).toEqual([])
    expect((await upload(t)).statusCode).toBe(201)
    expect(readdirSync(t.config.uploadTmpDir)).toEqual([])
  })

  it('a spool that cannot be written is a 500 with the documented body, logged with its cause; nothing is kept', async () => {
    const t = await createLoggedApp({})
    cleanups.push(t.close)
    // The directory turns into a file after start-up: every write under it fails (ENOTDIR), as root too.
    rmSync(t.config.uploadTmpDir, { recursive: true })
    writeFileSync(t.config.uploadTmpDir, '')
    const res = await upload(t)
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({ error: 'Error interno del servidor' })
    const logged = spoolErrors(t.lines)
    expect(logged).toHaveLength(1)
    expect(logged[0]?.level).toBe(50)
    expect((logged[0]?.err as { code?: string }).code).toBe('ENOTDIR')
    expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
    expect(storedImages(t.config)).toEqual([])
  })

  it('start-up fails when the spool directory cannot be created', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-spool-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'file'), '')
    await expect(createTestApp({ UPLOAD_TMP_DIR: join(dir, 'file', 'tmp') })).rejects.toMatchObject({ code: 'ENOTDIR' })
  })

  it('start-up removes spool files an earlier process left behind (older than an hour), and only those', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-spool-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000)
    writeFileSync(join(dir, 'shop-upload-left-by-a-crash'), 'x')
    utimesSync(join(dir, 'shop-upload-left-by-a-crash'), hoursAgo(2), hoursAgo(2))
    writeFileSync(join(dir, 'shop-upload-in-flight'), 'x')
    writeFileSync(join(dir, 'not-ours'), 'x')
    utimesSync(join(dir, 'not-ours'), hoursAgo(2), hoursAgo(2))
    const t = await createLoggedApp({ UPLOAD_TMP_DIR: dir })
    cleanups.push(t.close)
    expect(readdirSync(dir).sort()).toEqual(['not-ours', 'shop-upload-in-flight'])
    expect(t.lines.filter((l) => l.msg === 'removed upload spool files left by an earlier process')).toMatchObject([{ removed: 1 }])
  })

  // Needs root to mount a tmpfs; without it the ENOTDIR case above covers the same path.
  it.skipIf(!canMountSmallDisk())(
    'a full disk (a 256 KiB tmpfs) is a 500 logged as ENOSPC; the partial file is removed and the next small upload works',
    async () => {
      const disk = mkdtempSync(join(tmpdir(), 'shop-full-disk-'))
      cleanups.push(() => rmSync(disk, { recursive: true, force: true }))
      expect(mountSmallDisk(disk, '256k')).toBe(true)
      cleanups.push(() => {
        spawnSync('umount', [disk])
      })
      const t = await createLoggedApp({ UPLOAD_TMP_DIR: disk })
      cleanups.push(t.close)
      const res = await upload(t, [IMAGE_1MB])
      expect(res.statusCode).toBe(500)
      expect(res.json()).toEqual({ error: 'Error interno del servidor' })
      expect((spoolErrors(t.lines)[0]?.err as { code?: string }).code).toBe('ENOSPC')
      expect(readdirSync(disk)).toEqual([])
      expect(await t.app.db.selectFrom('products').select('id').execute()).toEqual([])
      // The space is free again: a small image fits.
      expect((await upload(t)).statusCode).toBe(201)
      expect(readdirSync(disk)).toEqual([])
    },
  )
})
