import { Readable } from 'node:stream'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { nowIso } from '../../shared/time.js'
import type { ImageHost } from '../images/image-host.js'
import { productImageKey } from '../images/image-upload.js'
import { renderPng } from '../images/png.js'
import * as categories from './categories.repository.js'
import { categoryNameKey } from './categories.service.js'
import * as products from './products.repository.js'
import { insertNewProduct } from './products.service.js'

type Rgb = [number, number, number]

const DEMO_CATEGORIES = [
  { name: 'Electrónica', description: 'Auriculares, cargadores y pequeños aparatos' },
  { name: 'Hogar', description: 'Cocina, mesa y decoración' },
  { name: 'Deportes', description: 'Para moverse dentro y fuera de casa' },
  { name: 'Libros', description: 'Novela, ensayo y cuadernos' },
] as const

// One product a line, read as a table.
// prettier-ignore
const DEMO_PRODUCTS: Array<{ name: string; description: string; price: number; stock: number; category: string; colors: [Rgb, Rgb] }> = [
  { name: 'Auriculares inalámbricos', description: 'Bluetooth 5.3, 30 h de batería', price: 5999, stock: 25, category: 'Electrónica', colors: [[30, 30, 40], [90, 90, 120]] },
  { name: 'Cargador USB-C 65 W', description: 'Carga rápida para portátil y móvil', price: 2999, stock: 40, category: 'Electrónica', colors: [[240, 240, 240], [160, 160, 170]] },
  { name: 'Altavoz portátil', description: 'Resistente al agua, sonido 360°', price: 4599, stock: 15, category: 'Electrónica', colors: [[20, 90, 160], [10, 40, 90]] },
  { name: 'Taza de cerámica', description: 'Esmaltada a mano, 350 ml', price: 1250, stock: 60, category: 'Hogar', colors: [[230, 200, 160], [180, 130, 90]] },
  { name: 'Set de cuchillos', description: 'Acero inoxidable, 5 piezas con soporte', price: 7900, stock: 8, category: 'Hogar', colors: [[200, 200, 210], [80, 80, 90]] },
  { name: 'Lámpara de mesa', description: 'Luz cálida regulable', price: 3450, stock: 12, category: 'Hogar', colors: [[250, 220, 120], [200, 150, 40]] },
  { name: 'Esterilla de yoga', description: 'Antideslizante, 6 mm', price: 2499, stock: 30, category: 'Deportes', colors: [[120, 60, 160], [60, 20, 100]] },
  { name: 'Botella térmica', description: 'Mantiene el frío 24 h', price: 1899, stock: 50, category: 'Deportes', colors: [[40, 160, 120], [10, 90, 70]] },
  { name: 'Balón de fútbol', description: 'Talla 5, cosido a máquina', price: 2200, stock: 20, category: 'Deportes', colors: [[250, 250, 250], [40, 40, 40]] },
  { name: 'Novela de misterio', description: 'Tapa blanda, 320 páginas', price: 1595, stock: 35, category: 'Libros', colors: [[120, 20, 30], [40, 10, 15]] },
  { name: 'Cuaderno punteado', description: 'A5, 120 hojas de 100 g', price: 990, stock: 80, category: 'Libros', colors: [[240, 230, 200], [200, 180, 140]] },
  { name: 'Tarjeta regalo', description: 'Válida en toda la tienda', price: 2500, stock: 100, category: '', colors: [[220, 50, 80], [250, 150, 60]] },
]

export interface SeedResult {
  categoriesCreated: number
  productsCreated: number
}

/**
 * Fills the catalog with a small demo: a few categories and a dozen products with real PNG images
 * stored through the configured image host. Idempotent: categories and products that already exist
 * (by name) are left alone, so running it twice adds nothing.
 */
export async function seedCatalog(db: Kysely<Database>, images: ImageHost): Promise<SeedResult> {
  const result: SeedResult = { categoriesCreated: 0, productsCreated: 0 }
  const categoryIds = new Map<string, number>()
  for (const category of DEMO_CATEGORIES) {
    const nameKey = categoryNameKey(category.name)
    let row = await categories.findCategoryByNameKey(db, nameKey)
    if (!row) {
      const now = nowIso()
      row = await categories.insertCategory(db, { name: category.name, name_key: nameKey, description: category.description, created_at: now, updated_at: now })
      result.categoriesCreated += 1
    }
    categoryIds.set(category.name, row.id)
  }

  for (const product of DEMO_PRODUCTS) {
    if (await products.findProductByName(db, product.name)) continue
    const png = renderPng(96, 96, product.colors[0], product.colors[1])
    const fileName = `${product.name
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')}.png`
    const key = productImageKey(fileName)
    await images.store(key, Readable.from([png]), 'image/png', png.length)
    try {
      const now = nowIso()
      await insertNewProduct(db, {
        name: product.name,
        description: product.description,
        price_cents: product.price,
        stock: product.stock,
        image_key: key,
        image_url: images.publicUrl(key),
        category_id: categoryIds.get(product.category) ?? null,
        created_at: now,
      })
    } catch (error) {
      await images.delete(key).catch(() => undefined)
      throw error
    }
    result.productsCreated += 1
  }
  return result
}
