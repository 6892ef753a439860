import { describe, expect, it } from 'vitest'
import { seedCatalog } from '../../src/modules/catalog/catalog.seed.js'
import { createImageHost } from '../../src/modules/images/image-host.js'
import { useTestApp } from '../helpers/app.js'
import { storedImages } from '../helpers/catalog.js'

const t = useTestApp()

describe('seedCatalog', () => {
  it('fills an empty catalog with categories and products whose images are real PNGs; a second run adds nothing', async () => {
    const host = createImageHost(t.config)
    expect(await seedCatalog(t.app.db, host)).toEqual({ categoriesCreated: 4, productsCreated: 12 })
    const list = await t.app.inject({ method: 'GET', url: '/products' })
    expect(list.headers['x-total-count']).toBe('12')
    const product = list.json()[0]
    const image = await t.app.inject({ method: 'GET', url: new URL(product.imageUrl).pathname })
    expect(image.statusCode).toBe(200)
    expect(image.headers['content-type']).toBe('image/png')
    expect(image.rawPayload.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    expect(storedImages(t.config)).toHaveLength(12)

    expect(await seedCatalog(t.app.db, host)).toEqual({ categoriesCreated: 0, productsCreated: 0 })
    expect((await t.app.inject({ method: 'GET', url: '/categories' })).json()).toHaveLength(4)
    expect(storedImages(t.config)).toHaveLength(12)
  })
})
