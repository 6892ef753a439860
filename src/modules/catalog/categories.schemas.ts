import type { FromSchema } from 'json-schema-to-ts'
import { messages } from '../../shared/errors.js'
import { SLUG_PATTERN } from '../../shared/slug.js'

const name = { type: 'string', minLength: 1, maxLength: 100 } as const
const description = { type: 'string', maxLength: 1000 } as const
/** 1–100 lowercase letters, digits and hyphens with a letter; `facets` is a route of its own, never a slug. */
export const slug = {
  type: 'string',
  pattern: SLUG_PATTERN.source,
  not: { const: 'facets' },
  errorMessages: { type: messages.slugInvalid, pattern: messages.slugInvalid, not: messages.slugReserved },
} as const
const parentId = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 2147483647,
  description: 'null: a root.',
  // Worded as an integer field's (null is the only other thing it may be).
  errorMessages: { type: 'parentId must be an integer number' },
} as const
const position = { type: 'integer', minimum: 0, maximum: 2147483647 } as const
const properties = { name, description, slug, parentId, position } as const

export const CreateCategoryBody = {
  type: 'object',
  required: ['name'],
  properties,
  additionalProperties: false,
} as const

/** PUT and PATCH alike: any of the fields; omitted ones stay unchanged. */
export const UpdateCategoryBody = {
  type: 'object',
  properties,
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

/** The deepest a category may be: a root is level 1. */
export const MAX_CATEGORY_DEPTH = 5

/** A category of `?tree=true`: its subcategories in `children`, by name. */
export type CategoryNode = Category & { children: CategoryNode[] }

/** Level `level` of the tree and those below it: written out, the tree being at most MAX_CATEGORY_DEPTH deep. */
function nodeSchema(level: number): object {
  const { title: _title, ...category } = Category
  void _title
  const children =
    level < MAX_CATEGORY_DEPTH
      ? { type: 'array', items: nodeSchema(level + 1) }
      : { type: 'array', maxItems: 0, description: 'Always empty: the deepest level.' }
  return { ...category, properties: { ...Category.properties, children: { ...children, description: 'With ?tree=true: the subcategories, by name.' } } }
}

/**
 * GET /categories: flat (no `children`) or, with `?tree=true`, the roots with their `children`. Typed as the flat
 * list (a node is a category and more); serialized by the schema it is, so the `children` are kept.
 */
export const CategoryListOrTree = { type: 'array', items: nodeSchema(1) } as unknown as typeof CategoryList

export const ListCategoriesQuery = {
  type: 'object',
  properties: { tree: { type: 'boolean', description: 'true: the roots with nested `children`; false (the default): flat, by name.' } },
  additionalProperties: false,
} as const
export type ListCategoriesQuery = FromSchema<typeof ListCategoriesQuery>

export type CreateCategoryInput = FromSchema<typeof CreateCategoryBody>
export type UpdateCategoryInput = FromSchema<typeof UpdateCategoryBody>
/** A category as the API shows it. */
export type Category = FromSchema<typeof Category>
