import { beforeAll, describe, expect, it } from 'vitest'
import { CreateProductForm, UpdateProductJson } from '../../src/modules/catalog/products.schemas.js'
import { validatorCompiler } from '../../src/shared/validation.js'
import { useTestApp } from '../helpers/app.js'
import { makeProduct } from '../helpers/catalog.js'
import { bearer } from '../helpers/factories.js'

interface Media {
  schema: { type: string; required?: string[]; properties: Record<string, Record<string, unknown>> }
}
interface Operation {
  requestBody?: { required: boolean; content: Record<string, Media> }
}

const t = useTestApp()
let paths: Record<string, Record<string, Operation>>
beforeAll(async () => {
  paths = (await t.app.inject({ url: '/openapi.json' })).json().paths
})

const image = { type: 'string', format: 'binary' }

describe('/openapi.json shows the product forms', () => {
  it('POST /products: a multipart form with the fields and the image as binary (name, price and image required), or JSON for a draft (with its options and variants)', () => {
    const body = paths['/products']?.post?.requestBody
    expect(body?.required).toBe(true)
    expect(Object.keys(body?.content ?? {})).toEqual(['multipart/form-data', 'application/json'])
    const schema = body?.content['multipart/form-data']?.schema
    expect(Object.keys(schema?.properties ?? {})).toEqual([
      'name',
      'description',
      'price',
      'stock',
      'categoryId',
      'slug',
      'status',
      'tags',
      'taxClass',
      'sku',
      'compareAtPrice',
      'image',
    ])
    const json = body?.content['application/json']?.schema
    // Price is required without options (the default variant's); with options, each variant brings its own.
    expect(json?.required).toEqual(['name'])
    expect(json?.properties.status).toMatchObject({ type: 'string', enum: ['draft'] })
    expect(json?.properties.variants).toMatchObject({ type: 'array', maxItems: 100, items: { $ref: '#/components/schemas/NewVariant' } })
    expect(json?.properties.options).toMatchObject({ type: 'array', items: { required: ['name'] } })
    expect(json?.properties.tags).toMatchObject({ type: 'array', items: { type: 'string' } })
    expect(schema?.properties.image).toMatchObject(image)
    expect(schema?.properties.price).toMatchObject({ type: 'number', minimum: 0, maximum: 99999999.99 })
    expect(schema?.required).toEqual(['name', 'price', 'image'])
  })

  it('PUT /products/{id}: the same form with nothing required, or JSON without an image', () => {
    const content = paths['/products/{id}']?.put?.requestBody?.content ?? {}
    expect(Object.keys(content)).toEqual(['multipart/form-data', 'application/json'])
    const form = content['multipart/form-data']?.schema
    expect(Object.keys(form?.properties ?? {})).toEqual([
      'name',
      'description',
      'price',
      'stock',
      'categoryId',
      'slug',
      'status',
      'tags',
      'taxClass',
      'sku',
      'compareAtPrice',
      'image',
    ])
    expect(form?.properties.image).toMatchObject(image)
    expect(form?.required).toBeUndefined()
    const json = content['application/json']?.schema
    expect(Object.keys(json?.properties ?? {})).toEqual([
      'name',
      'description',
      'price',
      'stock',
      'categoryId',
      'slug',
      'status',
      'tags',
      'taxClass',
      'sku',
      'compareAtPrice',
    ])
    expect(json?.properties.categoryId).toMatchObject({ anyOf: [{ type: 'integer' }, { type: 'null' }] })
  })
})

describe('the routes read and check these bodies themselves', () => {
  it('Fastify does not validate them: the compiled validator accepts anything', () => {
    for (const schema of [CreateProductForm, UpdateProductJson]) {
      const validate = validatorCompiler({ schema, httpPart: 'body', method: 'PUT', url: '/products/:id' }) as (data: unknown) => boolean
      expect(validate(null)).toBe(true)
      expect(validate({ price: true })).toBe(true)
    }
    // The same schema, not marked, is a real validator.
    const validate = validatorCompiler({ schema: { ...UpdateProductJson }, httpPart: 'body', method: 'PUT', url: '/products/:id' }) as (
      data: unknown,
    ) => boolean
    expect(validate({ price: true })).toBe(false)
  })

  it('a JSON update answers the route’s own message, not the schema’s', async () => {
    const p = await makeProduct(t.app, { name: 'Intacto' })
    const res = await t.app.inject({ method: 'PUT', url: `/products/${p.id}`, headers: bearer(t.admin), payload: { price: true } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toEqual({ error: 'price must be a number conforming to the specified constraints' })
  })
})
