import type { FromSchema } from 'json-schema-to-ts'

/** `?days=`: how many UTC calendar days the series covers, today included. */
export const StatsQuery = {
  type: 'object',
  properties: { days: { type: 'integer', minimum: 1, maximum: 365, default: 30 } },
  additionalProperties: false,
} as const
export type StatsQuery = FromSchema<typeof StatsQuery>

const count = { type: 'integer' } as const
const amount = { type: 'number' } as const

export const Stats = {
  title: 'DashboardStats',
  type: 'object',
  required: ['days', 'currency', 'series', 'totals', 'ordersToShip', 'ordersByStatus', 'lowStock', 'lowStockThreshold'],
  properties: {
    days: count,
    currency: { type: 'string' },
    series: {
      type: 'array',
      items: {
        type: 'object',
        required: ['date', 'orders', 'revenue'],
        properties: { date: { type: 'string', format: 'date' }, orders: count, revenue: amount },
      },
    },
    totals: { type: 'object', required: ['orders', 'revenue'], properties: { orders: count, revenue: amount } },
    ordersToShip: count,
    ordersByStatus: {
      type: 'object',
      required: ['pending', 'paid', 'shipped', 'delivered', 'cancelled'],
      properties: { pending: count, paid: count, shipped: count, delivered: count, cancelled: count },
    },
    lowStock: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'stock', 'imageUrl'],
        properties: { id: count, name: { type: 'string' }, stock: count, imageUrl: { type: 'string' } },
      },
    },
    lowStockThreshold: count,
  },
} as const
export type Stats = FromSchema<typeof Stats>
