import { unwrap } from './answers'
import type { Api } from './resource'
import type { components } from './schema'
import type { FullProduct } from './products'

/** A product's variant, as the API answers it. */
export type Variant = components['schemas']['Variant']
/** A product's option with its values. */
export type ProductOption = components['schemas']['ProductOption']
type NewVariant = components['schemas']['NewVariant']

/** The fields of a variant's row: a problem naming one of them is shown beside it. */
export const VARIANT_FIELDS = ['price', 'stock', 'sku', 'imageId', 'options'] as const
/** The fields of the option forms. */
const OPTION_FIELDS = ['name', 'defaultValue', 'values', 'value'] as const
/** How many variants one POST /products/:id/variants may create (the API's batch limit). */
export const BATCH_MAX = 100

const product = (id: number) => ({ params: { path: { id } } })

/** POST /products/:id/options: a new option, whose default value every existing variant takes. Answers the product. */
export async function addOption(api: Api, productId: number, option: { name: string; defaultValue: string; values: string[] }): Promise<FullProduct> {
  return unwrap(await api.POST('/products/{id}/options', { ...product(productId), body: option }), OPTION_FIELDS)
}

/** DELETE /products/:id/options/:optionId: the option leaves the product and its variants. Answers the product. */
export async function removeOption(api: Api, productId: number, optionId: number): Promise<FullProduct> {
  return unwrap(await api.DELETE('/products/{id}/options/{optionId}', { params: { path: { id: productId, optionId } } }))
}

/** DELETE /products/:id/options/:optionId/values/:valueId: a value no variant uses. Answers the product. */
export async function removeValue(api: Api, productId: number, optionId: number, valueId: number): Promise<FullProduct> {
  return unwrap(await api.DELETE('/products/{id}/options/{optionId}/values/{valueId}', { params: { path: { id: productId, optionId, valueId } } }))
}

/** POST /products/:id/variants with an array: all of them or none. Answers the variants created. */
export async function createVariants(api: Api, productId: number, variants: NewVariant[]): Promise<Variant[]> {
  const created = unwrap(await api.POST('/products/{id}/variants', { ...product(productId), body: variants }), VARIANT_FIELDS)
  return Array.isArray(created) ? created : [created]
}

/** The change a variant's row makes: price, stock, SKU (an empty SKU is none) and image (none: the product's). */
export interface VariantChange {
  price?: string
  stock?: number
  sku?: string | null
  imageId?: number | null
}

/** PATCH /variants/:id: answers the variant alone, which replaces its row (the product is not read again). */
export async function updateVariant(api: Api, variantId: number, change: VariantChange): Promise<Variant> {
  return unwrap(await api.PATCH('/variants/{id}', { params: { path: { id: variantId } }, body: change }), VARIANT_FIELDS)
}

/** DELETE /variants/:id (never the product's last one). */
export async function deleteVariant(api: Api, variantId: number): Promise<void> {
  unwrap(await api.DELETE('/variants/{id}', { params: { path: { id: variantId } } }))
}

/** One combination of option values: option name → value. */
export type Combination = Record<string, string>

/** A combination's key, ignoring case as the API compares values. */
function keyOf(options: readonly { name: string }[], combination: Combination): string {
  return options.map((option) => (combination[option.name] ?? '').toLowerCase()).join('\u0000')
}

/**
 * Every combination of the options' values (`values` by option name: the saved ones and those added on the page)
 * that no variant has yet, in option order: what "Generate combinations" creates.
 */
export function missingCombinations(options: readonly ProductOption[], values: Record<string, readonly string[]>, variants: readonly Variant[]): Combination[] {
  if (options.length === 0) return []
  const taken = new Set(variants.map((variant) => keyOf(options, Object.fromEntries(variant.optionValues.map((value) => [value.name, value.value])))))
  let combinations: Combination[] = [{}]
  for (const option of options) {
    const choices = values[option.name] ?? []
    combinations = combinations.flatMap((combination) => choices.map((value) => ({ ...combination, [option.name]: value })))
  }
  return combinations.filter((combination) => !taken.has(keyOf(options, combination)))
}
