import type { Client } from 'openapi-fetch'
import type {
  CreateParams,
  CreateResult,
  DataProvider,
  DeleteManyResult,
  DeleteResult,
  GetListParams,
  GetListResult,
  GetManyReferenceResult,
  GetManyResult,
  GetOneResult,
  Identifier,
  RaRecord,
  UpdateManyParams,
  UpdateManyResult,
  UpdateParams,
  UpdateResult,
} from 'react-admin'
import type { paths } from './schema'

/** The API's typed client (openapi-fetch over the generated `paths`): client.ts makes the dashboard's, tests their own. */
export type Api = Client<paths>

/** What react-admin's forms and filters hand over: the inputs' values by field name, of whatever type each input made. */
export type Values = Record<string, unknown>

/**
 * One resource of the dashboard (products.ts, orders.ts, ...), typed with the API's own records: what each of
 * react-admin's calls does for it, in the API's terms. A method left out is a call the API does not offer for it.
 */
export interface Resource<R extends RaRecord> {
  list(params: GetListParams): Promise<GetListResult<R>>
  one(id: number): Promise<R>
  /** Several by id (reference fields); by default one call per id, and the ids not found left out. */
  many?(ids: number[]): Promise<R[]>
  create?(data: Values): Promise<R>
  /** `previous` is the record as the form got it: a resource may send only what changed. */
  update?(id: number, data: Values, previous: Values): Promise<R>
  remove?(id: number): Promise<void>
}

/** The API's ids are integers; react-admin hands them over as it found them (a number, or text from the URL). */
const idOf = (id: Identifier): number => Number(id)

/**
 * react-admin's data provider for one resource. react-admin leaves the records' type to each page (its calls take a
 * `RecordType` that defaults to `any`): the resource's typed records are handed over as such, here and nowhere else.
 */
export function dataProviderOf<R extends RaRecord>(name: string, resource: Resource<R>): DataProvider {
  const missing = (call: string) => new Error(`The dashboard offers no ${call} of ${name}.`)
  const many = async (ids: Identifier[]): Promise<R[]> => {
    if (resource.many) return resource.many(ids.map(idOf))
    const settled = await Promise.allSettled(ids.map((id) => resource.one(idOf(id))))
    return settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  }
  const update = async (id: Identifier, data: Values, previous: Values): Promise<R> => {
    if (!resource.update) throw missing('change')
    return resource.update(idOf(id), data, previous)
  }
  const remove = async (id: Identifier): Promise<void> => {
    if (!resource.remove) throw missing('deletion')
    await resource.remove(idOf(id))
  }
  return {
    getList: async (_name, params): Promise<GetListResult> => resource.list(params),
    getOne: async (_name, params): Promise<GetOneResult> => ({ data: await resource.one(idOf(params.id)) }),
    getMany: async (_name, params): Promise<GetManyResult> => ({ data: await many(params.ids) }),
    // A list of this resource that belongs to another record: the list filtered by it (`/orders?userId=`).
    getManyReference: async (_name, params): Promise<GetManyReferenceResult> =>
      resource.list({ ...params, filter: { ...filtersOf(params), [params.target]: params.id } }),
    create: async (_name, params: CreateParams<Values>): Promise<CreateResult> => {
      if (!resource.create) throw missing('creation')
      return { data: await resource.create(params.data) }
    },
    update: async (_name, params: UpdateParams<Values & RaRecord>): Promise<UpdateResult> => ({
      data: await update(params.id, params.data, params.previousData),
    }),
    updateMany: async (_name, params: UpdateManyParams<Values & RaRecord>): Promise<UpdateManyResult> => {
      for (const id of params.ids) await update(id, params.data, {})
      return { data: params.ids }
    },
    delete: async (_name, params): Promise<DeleteResult> => {
      await remove(params.id)
      return { data: params.previousData }
    },
    deleteMany: async (_name, params): Promise<DeleteManyResult> => {
      for (const id of params.ids) await remove(id)
      return { data: params.ids }
    },
  }
}

/** react-admin's page and page size as the API's `limit` and `offset`. */
export function paging(params: GetListParams): { limit: number; offset: number } {
  const { page = 1, perPage = 25 } = params.pagination ?? {}
  return { limit: perPage, offset: (page - 1) * perPage }
}

/** How many rows the list has in all (`X-Total-Count`, sent by every paged list of the API). */
export function totalOf(response: Response): number {
  const header = response.headers.get('X-Total-Count')
  if (header === null) throw new Error(`The shop API sent no X-Total-Count for ${response.url || 'a list'}`)
  return Number(header)
}

/** A list's filters as react-admin keeps them (from its filter form or the page's URL). */
export function filtersOf(params: { filter?: unknown }): Values {
  const filter: unknown = params.filter
  return typeof filter === 'object' && filter !== null ? (filter as Values) : {}
}

/** A form or filter value as text: strings and numbers as they are, anything else (nothing, an object) as "". */
export function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : ''
}

/** A value as a positive integer id (a filter from the URL is text), or undefined when it is none. */
export function idValue(value: unknown): number | undefined {
  const id = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN
  return Number.isInteger(id) && id > 0 ? id : undefined
}

/** An amount from a number input: its number, null when emptied (react-admin empties a cleared input to null or ""). */
export function amountOrNull(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null
  return typeof value === 'number' ? value : Number(value)
}

/** The fields whose values differ between the form's data and the record it started from. */
export function changed<K extends string>(fields: readonly K[], data: Values, previous: Values): K[] {
  return fields.filter((field) => field in data && JSON.stringify(data[field]) !== JSON.stringify(previous[field]))
}
