import type { Client, ClientOptions } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

export type { components, operations, paths }

/** The named shapes of the API (Product, Order, Error, Problem, ...), as `Schemas['Product']`. */
export type Schemas = components['schemas']

/** An error as problem details: `code` says what went wrong, `field` which field (validation), `detail` the message. */
export type Problem = Schemas['Problem']

export interface ShopClientOptions extends ClientOptions {
  /** The access token (`Authorization: Bearer`), or a function asked before each request; none when it returns nothing. */
  token?: string | (() => string | null | undefined)
}

/**
 * A typed client for one service: `client.GET('/products/{id}', { params: { path: { id: '7' } } })`. Its requests ask for
 * errors as problem details (`Accept: application/json, application/problem+json`) unless they set Accept themselves.
 */
export declare function createShopClient(options?: ShopClientOptions): Client<paths>

/** Whether an answer's `error` is problem details; narrows `{error}` | Problem to Problem. */
export declare function isProblem(error: unknown): error is Problem
