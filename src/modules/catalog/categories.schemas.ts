import type { FromSchema } from 'json-schema-to-ts'

const name = { type: 'string', minLength: 1, maxLength: 100 } as const
const description = { type: 'string', maxLength: 1000 } as const

export const CreateCategoryBody = {
  type: 'object',
  required: ['name'],
  properties: { name, description },
  additionalProperties: false,
} as const

/** PUT and PATCH alike: any of the fields; omitted ones stay unchanged. */
export const UpdateCategoryBody = {
  type: 'object',
  properties: { name, description },
  additionalProperties: false,
  minProperties: 1,
} as const

export const Category = {
  title: 'Category',
  type: 'object',
  required: ['id', 'name', 'slug', 'description', 'parentId', 'position', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    slug: { type: 'string' },
    description: { type: 'string' },
    parentId: { type: ['integer', 'null'], description: 'null: a root.' },
    position: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const

export const CategoryList = { type: 'array', items: Category } as const

export type CreateCategoryInput = FromSchema<typeof CreateCategoryBody>
export type UpdateCategoryInput = FromSchema<typeof UpdateCategoryBody>
/** A category as the API shows it. */
export type Category = FromSchema<typeof Category>
