import type { Kysely, Selectable, Transaction } from 'kysely'
import type { Dialect } from '../../db/connect.js'
import type { Database, ProductOptionsTable, ProductOptionValuesTable, VariantRow } from '../../db/database.js'
import { isUniqueViolation } from '../../shared/db-errors.js'
import { AppError, messages } from '../../shared/errors.js'
import type { EventSink } from '../../shared/event-sink.js'
import { nowIso } from '../../shared/time.js'
import { ValidationError } from '../../shared/validation.js'
import { loadImages, loadVariantValues, productFromRows, toProduct, variantRowToVariant } from './product-view.js'
import type { Product, VariantView } from './products.schemas.js'
import { type AuditEntry, type AuditSource, recordAudit } from '../staff/audit-log.js'
import { assertTaxClassExists } from '../taxes/taxes.service.js'
import * as repo from './variants.repository.js'
import { parseNewOption, parseNewVariants, parseOptionChange, parseValueChange, parseVariantInput, type VariantInput } from './variants.schemas.js'

type Trx = Transaction<Database>
type OptionRow = Selectable<ProductOptionsTable>
type ValueRow = Selectable<ProductOptionValuesTable>

/** What the option and variant writes need: the database, where their events go, and the caps of a product. */
export interface VariantsContext {
  db: Kysely<Database>
  dialect: Dialect
  events: EventSink
  limits: VariantLimits
  /** Who asks: each write records its audit entry in its transaction. */
  audit: AuditSource
}

/** MAX_OPTIONS_PER_PRODUCT and MAX_VARIANTS_PER_PRODUCT. */
export interface VariantLimits {
  maxOptions: number
  maxVariants: number
}

/** A product's options, values and variants, read inside a write (the product locked). */
interface ProductState {
  productId: number
  options: OptionRow[]
  values: ValueRow[]
  variants: VariantRow[]
  /** Variant id → its option value ids. */
  links: Map<number, number[]>
}

async function loadState(trx: Trx, productId: number): Promise<ProductState> {
  // One after the other: a transaction is one connection.
  const { options, values } = await repo.findOptionRows(trx, productId)
  const { variants, links } = await repo.findVariantRows(trx, productId)
  return { productId, options, values, variants, links }
}

const keyOf = (text: string) => text.toLowerCase()

/** The unique key of a set of values: their ids, sorted, joined by ','. */
const valuesKey = (valueIds: readonly number[]) => [...valueIds].sort((a, b) => a - b).join(',')

/** The title of a variant of these values: the values in option order joined by ' / '; null without options. */
function titleOf(state: ProductState, valueIds: readonly number[]): string | null {
  if (state.options.length === 0) return null
  const parts: string[] = []
  for (const option of state.options) {
    const value = state.values.find((v) => v.option_id === option.id && valueIds.includes(v.id))
    if (value) parts.push(value.value)
  }
  return parts.join(' / ')
}

/** Writes each variant's title and values key as its values now make them (after an option or value changed). */
async function rewriteVariants(trx: Trx, state: ProductState, now: string): Promise<void> {
  for (const variant of state.variants) {
    const ids = state.links.get(variant.id) ?? []
    const title = titleOf(state, ids)
    const key = valuesKey(ids)
    if (title !== variant.title || key !== variant.values_key) await repo.updateVariant(trx, variant.id, { title, values_key: key, updated_at: now })
  }
}

/** The ids of `items` with `id` moved to place `to` (past the end: last). */
function moveTo(items: ReadonlyArray<{ id: number }>, id: number, to: number): number[] {
  const ids = items.map((item) => item.id).filter((other) => other !== id)
  ids.splice(Math.min(to, ids.length), 0, id)
  return ids
}

/**
 * One write to a product's options or variants, in one transaction: the product locked (its variants, then it), 404
 * when it is gone; then `change`; then the product's price range and stock made true again, `product.updated` with the
 * product whole, and `stock.low` by its rule.
 */
async function writeProduct<T>(
  ctx: VariantsContext,
  productId: number,
  change: (trx: Trx, state: ProductState, now: string) => Promise<T>,
  /** The audit entry of the change, given the product before and after it (as answered) and the change's result. */
  audit: (before: Product, after: Product, result: T) => Omit<AuditEntry, 'by'>,
  options: {
    /** What answers when the product (or the variant written) is gone. */
    notFound?: AppError
    /** The change keeps `state` true (its rows as written): the product is built from it, not read again. */
    keepsState?: boolean
  } = {},
): Promise<{ product: Product; result: T }> {
  const { notFound = new AppError(404, 'productNotFound'), keepsState = false } = options
  return ctx.db.transaction().execute(async (trx) => {
    const locked = await repo.lockProduct(trx, ctx.dialect, productId)
    if (!locked) throw notFound
    const now = nowIso()
    const state = await loadState(trx, locked.id)
    // The product before, from the rows just read (not read again: a hundred variants and their links are most of
    // a write's reads); a variant write changes no image, so the images serve the product after too.
    const images = await loadImages(trx, locked.id)
    const before = productFromRows(locked, images, state)
    const result = await change(trx, state, now)
    const row = await repo.refreshProductAggregates(trx, locked.id, now)
    if (!row) throw notFound
    const product = keepsState ? productFromRows(row, images, state) : await toProduct(trx, row)
    await ctx.events.emit(trx, { type: 'product.updated', data: product })
    await ctx.events.stockChanged(trx, product, locked.stock)
    await recordAudit(trx, { by: ctx.audit, ...audit(before, product, result) })
    return { product, result }
  })
}

/** An option or value write, recorded as a change of its product (the routes answer the product). */
const productChange = (verb: string, productId: number, before: Product, after: Product): Omit<AuditEntry, 'by'> => ({
  action: `product.${verb}`,
  entityType: 'product',
  entityId: productId,
  before,
  after,
})

function findOption(state: ProductState, optionId: number): OptionRow {
  const option = state.options.find((o) => o.id === optionId)
  if (!option) throw new AppError(404, 'optionNotFound')
  return option
}

/** POST /products/:id/options: the option, its values, and `defaultValue` on every variant the product has. */
export async function addOption(ctx: VariantsContext, productId: number, body: unknown): Promise<Product> {
  const input = parseNewOption(body)
  const { product } = await writeProduct(
    ctx,
    productId,
    async (trx, state, now) => {
      if (state.options.length >= ctx.limits.maxOptions) throw new AppError(409, 'tooManyOptions', ctx.limits.maxOptions)
      if (state.options.some((o) => o.name_key === keyOf(input.name))) throw new AppError(409, 'optionExists', input.name)
      const optionId = await repo.insertOption(trx, { product_id: productId, name: input.name, name_key: keyOf(input.name), position: state.options.length })
      const values = input.values.some((v) => keyOf(v) === keyOf(input.defaultValue)) ? input.values : [...input.values, input.defaultValue]
      const rows: ValueRow[] = []
      for (const [position, value] of values.entries()) {
        const id = await repo.insertOptionValue(trx, { option_id: optionId, value, value_key: keyOf(value), position })
        rows.push({ id, option_id: optionId, value, value_key: keyOf(value), position })
      }
      const defaultId = rows.find((row) => row.value_key === keyOf(input.defaultValue))!.id
      await repo.linkValues(
        trx,
        state.variants.map((v) => ({ variant_id: v.id, option_value_id: defaultId })),
      )
      state.options.push({ id: optionId, product_id: productId, name: input.name, name_key: keyOf(input.name), position: state.options.length })
      state.values.push(...rows)
      for (const variant of state.variants) state.links.set(variant.id, [...(state.links.get(variant.id) ?? []), defaultId])
      await rewriteVariants(trx, state, now)
    },
    (before, after) => productChange('add_option', productId, before, after),
  )
  return product
}

/**
 * The options of a product being created (JSON create: `options` then `variants`), inside its transaction, before it
 * has any variant: the cap and the names as POST /products/:id/options checks them (409), values kept once ignoring
 * case. Its variants then come from addVariants.
 */
export async function insertOptions(
  trx: Trx,
  limits: VariantLimits,
  productId: number,
  options: ReadonlyArray<{ name: string; values: readonly string[] }>,
): Promise<void> {
  if (options.length > limits.maxOptions) throw new AppError(409, 'tooManyOptions', limits.maxOptions)
  const names = new Set<string>()
  for (const [position, option] of options.entries()) {
    if (names.has(keyOf(option.name))) throw new AppError(409, 'optionExists', option.name)
    names.add(keyOf(option.name))
    const optionId = await repo.insertOption(trx, { product_id: productId, name: option.name, name_key: keyOf(option.name), position })
    const kept: string[] = []
    for (const value of option.values) if (!kept.some((v) => keyOf(v) === keyOf(value))) kept.push(value)
    for (const [valuePosition, value] of kept.entries()) {
      await repo.insertOptionValue(trx, { option_id: optionId, value, value_key: keyOf(value), position: valuePosition })
    }
  }
}

/** PATCH /products/:id/options/:optionId: a new name (unique ignoring case) or place. */
export async function updateOption(ctx: VariantsContext, productId: number, optionId: number, body: unknown): Promise<Product> {
  const input = parseOptionChange(body)
  const { product } = await writeProduct(
    ctx,
    productId,
    async (trx, state, now) => {
      const option = findOption(state, optionId)
      if (input.name !== undefined) {
        const name = input.name
        if (state.options.some((o) => o.id !== optionId && o.name_key === keyOf(name))) throw new AppError(409, 'optionExists', name)
        await repo.updateOption(trx, optionId, { name, name_key: keyOf(name) })
        option.name = name
      }
      if (input.position !== undefined) {
        const order = moveTo(state.options, optionId, input.position)
        for (const [position, id] of order.entries()) {
          const row = state.options.find((o) => o.id === id)
          if (row && row.position !== position) await repo.updateOption(trx, id, { position })
        }
        state.options.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id))
        // The titles follow the options' order.
        await rewriteVariants(trx, state, now)
      }
    },
    (before, after) => productChange('update_option', productId, before, after),
  )
  return product
}

/**
 * DELETE /products/:id/options/:optionId: the option goes from every variant; refused when two variants would then be
 * alike. A one-variant product losing its last option is back to a default variant (no title, values key '').
 */
export async function deleteOption(ctx: VariantsContext, productId: number, optionId: number): Promise<Product> {
  const { product } = await writeProduct(
    ctx,
    productId,
    async (trx, state, now) => {
      findOption(state, optionId)
      const removed = new Set(state.values.filter((v) => v.option_id === optionId).map((v) => v.id))
      const keys = new Set<string>()
      for (const variant of state.variants) {
        const remaining = (state.links.get(variant.id) ?? []).filter((id) => !removed.has(id))
        const key = valuesKey(remaining)
        if (keys.has(key)) throw new AppError(409, 'optionRemovalDuplicates')
        keys.add(key)
        state.links.set(variant.id, remaining)
      }
      await repo.deleteOption(trx, optionId)
      state.options = state.options.filter((o) => o.id !== optionId)
      state.values = state.values.filter((v) => v.option_id !== optionId)
      for (const [position, option] of state.options.entries()) {
        if (option.position !== position) await repo.updateOption(trx, option.id, { position })
        option.position = position
      }
      await rewriteVariants(trx, state, now)
    },
    (before, after) => productChange('delete_option', productId, before, after),
  )
  return product
}

function findValue(state: ProductState, optionId: number, valueId: number): ValueRow {
  findOption(state, optionId)
  const value = state.values.find((v) => v.id === valueId && v.option_id === optionId)
  if (!value) throw new AppError(404, 'optionNotFound')
  return value
}

/** PATCH /products/:id/options/:optionId/values/:valueId: a new spelling (unique in its option) or place. */
export async function updateOptionValue(ctx: VariantsContext, productId: number, optionId: number, valueId: number, body: unknown): Promise<Product> {
  const input = parseValueChange(body)
  const { product } = await writeProduct(
    ctx,
    productId,
    async (trx, state, now) => {
      const row = findValue(state, optionId, valueId)
      const siblings = state.values.filter((v) => v.option_id === optionId)
      if (input.value !== undefined) {
        const value = input.value
        if (siblings.some((v) => v.id !== valueId && v.value_key === keyOf(value))) throw new AppError(409, 'optionValueExists', value)
        await repo.updateOptionValue(trx, valueId, { value, value_key: keyOf(value) })
        row.value = value
        await rewriteVariants(trx, state, now)
      }
      if (input.position !== undefined) {
        for (const [position, id] of moveTo(siblings, valueId, input.position).entries()) {
          if (siblings.find((v) => v.id === id)?.position !== position) await repo.updateOptionValue(trx, id, { position })
        }
      }
    },
    (before, after) => productChange('update_option_value', productId, before, after),
  )
  return product
}

/** DELETE /products/:id/options/:optionId/values/:valueId: only a value no variant uses. */
export async function deleteOptionValue(ctx: VariantsContext, productId: number, optionId: number, valueId: number): Promise<Product> {
  const { product } = await writeProduct(
    ctx,
    productId,
    async (trx, state) => {
      findValue(state, optionId, valueId)
      const uses = [...state.links.values()].filter((ids) => ids.includes(valueId)).length
      if (uses > 0) throw new AppError(409, 'optionValueInUse', uses)
      await repo.deleteOptionValue(trx, valueId)
      const rest = state.values.filter((v) => v.option_id === optionId && v.id !== valueId)
      for (const [position, value] of rest.entries()) if (value.position !== position) await repo.updateOptionValue(trx, value.id, { position })
    },
    (before, after) => productChange('delete_option_value', productId, before, after),
  )
  return product
}

/**
 * The option values a variant input names, in the product's option order: 422 unless it names every option once
 * (names ignoring case). Values not yet in their option are returned as `value` only, to be added.
 */
function resolveOptions(state: ProductState, input: VariantInput): Array<{ option: OptionRow; sent: string; valueId?: number }> {
  const named = input.options ?? []
  const fail = () => {
    throw new ValidationError(messages.optionsIncomplete, 'options')
  }
  if (named.length !== state.options.length) fail()
  const resolved: Array<{ option: OptionRow; sent: string; valueId?: number }> = []
  for (const option of state.options) {
    const matches = named.filter((n) => keyOf(n.name) === option.name_key)
    if (matches.length !== 1) fail()
    const sent = matches[0]!.value
    const existing = state.values.find((v) => v.option_id === option.id && v.value_key === keyOf(sent))
    resolved.push({ option, sent, ...(existing ? { valueId: existing.id } : {}) })
  }
  return resolved
}

/** The 422 of an image that is not one of the product's (or no image at all). */
async function assertImageOfProduct(trx: Trx, productId: number, imageId: number | null | undefined): Promise<void> {
  if (imageId === undefined || imageId === null) return
  if ((await repo.findImageProduct(trx, imageId)) !== productId) throw new AppError(422, 'imageOfAnotherProduct')
}

/** The value ids of a resolved input, adding to their option the values it does not have yet. */
async function valueIdsFor(trx: Trx, state: ProductState, resolved: ReturnType<typeof resolveOptions>): Promise<number[]> {
  const ids: number[] = []
  for (const entry of resolved) {
    let id = entry.valueId ?? state.values.find((v) => v.option_id === entry.option.id && v.value_key === keyOf(entry.sent))?.id
    if (id === undefined) {
      const position = state.values.filter((v) => v.option_id === entry.option.id).length
      id = await repo.insertOptionValue(trx, { option_id: entry.option.id, value: entry.sent, value_key: keyOf(entry.sent), position })
      state.values.push({ id, option_id: entry.option.id, value: entry.sent, value_key: keyOf(entry.sent), position })
    }
    ids.push(id)
  }
  return ids
}

/** The 409 of a SKU some other variant has (ignoring case). */
export async function assertSkuFree(trx: Trx, sku: string | null | undefined, exceptVariantId?: number): Promise<void> {
  if (sku === undefined || sku === null) return
  const holder = await repo.findVariantIdBySku(trx, keyOf(sku))
  if (holder !== undefined && holder !== exceptVariantId) throw new AppError(409, 'skuTaken', sku)
}

/**
 * Adds variants to a product whose lock the caller holds (`trx`): every check of POST /products/:id/variants past
 * the body's own (422 options and image, then 409 cap, SKU, same values), then the rows. Answers the new variants'
 * ids, in input order. A product create with `variants` calls this in its own transaction.
 */
export async function addVariants(trx: Trx, limits: VariantLimits, productId: number, inputs: readonly VariantInput[]): Promise<number[]> {
  const state = await loadState(trx, productId)
  const resolved = inputs.map((input) => resolveOptions(state, input))
  for (const input of inputs) await assertImageOfProduct(trx, productId, input.imageId)
  for (const input of inputs) if (input.taxClass) await assertTaxClassExists(trx, input.taxClass)
  if (state.variants.length + inputs.length > limits.maxVariants) throw new AppError(409, 'tooManyVariants', limits.maxVariants)
  const skus = new Set<string>()
  const keys = new Set(state.variants.map((v) => v.values_key))
  const now = nowIso()
  let position = Math.max(-1, ...state.variants.map((v) => v.position)) + 1
  const ids: number[] = []
  for (const [index, input] of inputs.entries()) {
    const sku = input.sku ?? null
    if (sku !== null) {
      if (skus.has(keyOf(sku))) throw new AppError(409, 'skuTaken', sku)
      await assertSkuFree(trx, sku)
      skus.add(keyOf(sku))
    }
    const entries = resolved[index]!
    const valueIds = await valueIdsFor(trx, state, entries)
    const key = valuesKey(valueIds)
    if (keys.has(key)) throw new AppError(409, 'variantExists', entries.map((e) => e.sent).join(' / '))
    keys.add(key)
    const row = await repo.insertVariant(trx, {
      product_id: productId,
      sku,
      sku_key: sku === null ? null : keyOf(sku),
      title: titleOf(state, valueIds),
      price_cents: input.priceCents ?? 0,
      compare_at_cents: input.compareAtCents ?? null,
      stock: input.stock ?? 0,
      image_id: input.imageId ?? null,
      tax_class: input.taxClass ?? null,
      position,
      values_key: key,
      created_at: now,
      updated_at: now,
    })
    position += 1
    if (valueIds.length > 0)
      await repo.linkValues(
        trx,
        valueIds.map((id) => ({ variant_id: row.id, option_value_id: id })),
      )
    ids.push(row.id)
  }
  return ids
}

/**
 * A unique key that refused a row another transaction wrote meanwhile (a SKU of another product, taken at the same
 * moment): the 409 the checks would have answered.
 */
export function conflictOf(error: unknown, inputs: readonly Pick<VariantInput, 'sku' | 'options'>[]): unknown {
  if (!isUniqueViolation(error)) return error
  const text = `${(error as { constraint?: string }).constraint ?? ''} ${(error as Error).message} ${(error as { detail?: string }).detail ?? ''}`
  if (/sku/.test(text)) {
    const sku = inputs.find((input) => input.sku && text.toLowerCase().includes(keyOf(input.sku)))?.sku ?? inputs.find((input) => input.sku)?.sku
    if (sku) return new AppError(409, 'skuTaken', sku)
  }
  const only = inputs.length === 1 ? inputs[0] : undefined
  if (/values_key/.test(text) && only?.options) return new AppError(409, 'variantExists', only.options.map((o) => o.value).join(' / '))
  return error
}

const byId = (product: Product, ids: readonly number[]): VariantView[] =>
  ids.map((id) => product.variants.find((v) => v.id === id)).filter((v): v is VariantView => v !== undefined)

/** POST /products/:id/variants: one variant (answered alone) or a batch of up to 100 (answered as an array), all or nothing. */
export async function createVariants(ctx: VariantsContext, productId: number, body: unknown): Promise<VariantView | VariantView[]> {
  const { inputs, batch } = parseNewVariants(body)
  try {
    const { product, result } = await writeProduct(
      ctx,
      productId,
      (trx) => addVariants(trx, ctx.limits, productId, inputs),
      // A batch is one write: one entry, its variants in a list.
      (_before, after, ids) => {
        const created = byId(after, ids)
        return { action: 'variant.create', entityType: 'variant', entityId: batch ? null : ids[0]!, before: null, after: batch ? created : created[0] }
      },
    )
    const created = byId(product, result)
    return batch ? created : created[0]!
  } catch (error) {
    throw conflictOf(error, inputs)
  }
}

/** A variant row as written, in place of the one `state` held. */
function keepRow(state: ProductState, row: VariantRow | undefined): void {
  if (!row) return
  const at = state.variants.findIndex((v) => v.id === row.id)
  if (at >= 0) state.variants[at] = row
}

/** The product of a variant (variants never change product), for the lock; 404 for an unknown variant. */
async function productOfVariant(ctx: VariantsContext, variantId: number): Promise<number> {
  const productId = await repo.findVariantProductId(ctx.db, variantId)
  if (productId === undefined) throw new AppError(404, 'variantNotFound')
  return productId
}

function findVariant(state: ProductState, variantId: number): VariantRow {
  const variant = state.variants.find((v) => v.id === variantId)
  // Deleted while this write waited for the lock.
  if (!variant) throw new AppError(404, 'variantNotFound')
  return variant
}

/** The fields of a variant's own row a PATCH may change, besides its options and place. */
function ownFields(input: VariantInput): Partial<VariantRow> {
  return {
    ...(input.priceCents !== undefined ? { price_cents: input.priceCents } : {}),
    ...(input.compareAtCents !== undefined ? { compare_at_cents: input.compareAtCents } : {}),
    ...(input.stock !== undefined ? { stock: input.stock } : {}),
    ...(input.sku !== undefined ? { sku: input.sku, sku_key: input.sku === null ? null : keyOf(input.sku) } : {}),
    ...(input.imageId !== undefined ? { image_id: input.imageId } : {}),
    ...(input.taxClass !== undefined ? { tax_class: input.taxClass } : {}),
  }
}

/**
 * PATCH /variants/:id of the variant's own fields (price, compare-at price, stock, SKU, image, tax class): the write
 * reads that variant's row and option values, not the product's hundred variants. The product whole is read only for
 * an event a listener takes (`product.updated` to a subscribed webhook, `stock.low` when the rule fires), once.
 */
async function updateVariantFields(ctx: VariantsContext, variantId: number, input: VariantInput): Promise<VariantView> {
  return ctx.db.transaction().execute(async (trx) => {
    const locked = await repo.lockVariantAndProduct(trx, variantId)
    if (!locked) throw new AppError(404, 'variantNotFound')
    const productId = locked.product.id
    const now = nowIso()
    const values = await loadVariantValues(trx, variantId)
    await assertImageOfProduct(trx, productId, input.imageId)
    if (input.taxClass) await assertTaxClassExists(trx, input.taxClass)
    await assertSkuFree(trx, input.sku, variantId)
    const updated = await repo.updateVariant(trx, variantId, { ...ownFields(input), updated_at: now })
    const row = await repo.refreshProductAggregates(trx, productId, now)
    if (!updated || !row) throw new AppError(404, 'variantNotFound')
    let whole: Promise<Product> | undefined
    const product = () => (whole ??= toProduct(trx, row))
    await ctx.events.emitLoaded(trx, 'product.updated', product)
    await ctx.events.stockChanged(trx, row, locked.product.stock, product)
    const after = variantRowToVariant(updated, values)
    await recordAudit(trx, {
      by: ctx.audit,
      action: 'variant.update',
      entityType: 'variant',
      entityId: variantId,
      before: variantRowToVariant(locked.variant, values),
      after,
    })
    return after
  })
}

/** PATCH /variants/:id: any field, options included (a new value joins its option); answers the variant alone. */
export async function updateVariant(ctx: VariantsContext, variantId: number, body: unknown): Promise<VariantView> {
  const input = parseVariantInput(body, false)
  try {
    if (input.options === undefined && input.position === undefined) return await updateVariantFields(ctx, variantId, input)
    const productId = await productOfVariant(ctx, variantId)
    const { product } = await writeProduct(
      ctx,
      productId,
      async (trx, state, now) => {
        const variant = findVariant(state, variantId)
        const resolved = input.options !== undefined ? resolveOptions(state, input) : undefined
        await assertImageOfProduct(trx, productId, input.imageId)
        if (input.taxClass) await assertTaxClassExists(trx, input.taxClass)
        await assertSkuFree(trx, input.sku, variant.id)
        let valueChange: { title: string | null; values_key: string } | undefined
        if (resolved) {
          const valueIds = await valueIdsFor(trx, state, resolved)
          const key = valuesKey(valueIds)
          if (state.variants.some((v) => v.id !== variant.id && v.values_key === key)) {
            throw new AppError(409, 'variantExists', resolved.map((e) => e.sent).join(' / '))
          }
          valueChange = { title: titleOf(state, valueIds), values_key: key }
          if (key !== variant.values_key) {
            await repo.setVariantValues(trx, variant.id, valueIds)
            state.links.set(variant.id, valueIds)
          }
        }
        let position: number | undefined
        if (input.position !== undefined) {
          for (const [place, id] of moveTo(state.variants, variant.id, input.position).entries()) {
            if (id === variant.id) position = place
            else if (state.variants.find((v) => v.id === id)?.position !== place) {
              keepRow(state, await repo.updateVariant(trx, id, { position: place, updated_at: now }))
            }
          }
        }
        const updated = await repo.updateVariant(trx, variant.id, {
          ...(valueChange ?? {}),
          ...ownFields(input),
          ...(position !== undefined ? { position } : {}),
          updated_at: now,
        })
        keepRow(state, updated)
      },
      (before, after) => ({
        action: 'variant.update',
        entityType: 'variant',
        entityId: variantId,
        before: byId(before, [variantId])[0],
        after: byId(after, [variantId])[0],
      }),
      // New values or a new place touch other rows (the unique key, the positions): those lock every variant.
      { notFound: new AppError(404, 'variantNotFound'), keepsState: true },
    )
    return byId(product, [variantId])[0]!
  } catch (error) {
    throw conflictOf(error, [input])
  }
}

/** DELETE /variants/:id: never the product's last; its cart lines go with it, orders keep their copy. */
export async function deleteVariant(ctx: VariantsContext, variantId: number): Promise<void> {
  const productId = await productOfVariant(ctx, variantId)
  await writeProduct(
    ctx,
    productId,
    async (trx, state) => {
      findVariant(state, variantId)
      if (state.variants.length <= 1) throw new AppError(409, 'lastVariant')
      await repo.deleteVariant(trx, variantId)
    },
    (before) => ({ action: 'variant.delete', entityType: 'variant', entityId: variantId, before: byId(before, [variantId])[0], after: null }),
    { notFound: new AppError(404, 'variantNotFound') },
  )
}
