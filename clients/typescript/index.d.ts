import type { Client, ClientOptions } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

export type { components, operations, paths }

/** The named shapes of the API (Product, Order, Error, ...), as `Schemas['Product']`. */
export type Schemas = components['schemas']

export interface ShopClientOptions extends ClientOptions {
  /** The access token (`Authorization: Bearer`), or a function asked before each request; none when it returns nothing. */
  token?: string | (() => string | null | undefined)
}

/** A typed client for one service: `client.GET('/products/{id}', { params: { path: { id } } })`. */
export declare function createShopClient(options?: ShopClientOptions): Client<paths>
