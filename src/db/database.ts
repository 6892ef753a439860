import type { Generated, Insertable, Selectable, Updateable } from 'kysely'

/** Timestamps are ISO 8601 UTC strings with milliseconds, the same on every dialect. */
type Timestamp = string

export interface UsersTable {
  id: Generated<number>
  name: string
  /** Trimmed and lower-cased; unique. */
  email: string
  password_hash: string
  role: 'customer' | 'admin'
  created_at: Timestamp
  updated_at: Timestamp
  /** Tokens issued before this instant (role or password change) are rejected. */
  credentials_changed_at: Timestamp
}

export interface CategoriesTable {
  id: Generated<number>
  name: string
  /** The name lower-cased (Unicode): unique, so names are unique ignoring case; also the list order. */
  name_key: string
  description: string
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ProductsTable {
  id: Generated<number>
  name: string
  description: string
  /** Integer cents: money is never a float inside the service. */
  price_cents: number
  stock: number
  image_key: string
  image_url: string
  category_id: number | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface CartItemsTable {
  id: Generated<number>
  user_id: number
  product_id: number
  quantity: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface OrdersTable {
  id: Generated<number>
  /** No foreign key: orders are kept for the books when a user is deleted. */
  user_id: number
  total_cents: number
  status: 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled'
  created_at: Timestamp
  updated_at: Timestamp
}

export interface OrderItemsTable {
  id: Generated<number>
  order_id: number
  /** No foreign key: the line outlives the product. */
  product_id: number
  quantity: number
  price_cents: number
}

export interface IdempotencyKeysTable {
  user_id: number
  key: string
  order_id: number
  created_at: Timestamp
}

/** Products in all (category_id 0) and per category; kept by triggers on products. */
export interface ProductCountsTable {
  category_id: number
  total: number
}

export interface Database {
  users: UsersTable
  categories: CategoriesTable
  products: ProductsTable
  product_counts: ProductCountsTable
  cart_items: CartItemsTable
  orders: OrdersTable
  order_items: OrderItemsTable
  idempotency_keys: IdempotencyKeysTable
}

export type UserRow = Selectable<UsersTable>
export type NewUserRow = Insertable<UsersTable>
export type UserUpdate = Updateable<UsersTable>
export type CategoryRow = Selectable<CategoriesTable>
export type ProductRow = Selectable<ProductsTable>
export type CartItemRow = Selectable<CartItemsTable>
export type OrderRow = Selectable<OrdersTable>
export type OrderItemRow = Selectable<OrderItemsTable>
