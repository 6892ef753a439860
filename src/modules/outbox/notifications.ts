import type { Config } from '../../config.js'
import { createOrderTokens, orderLinkUrl } from '../orders/order-token.js'
import type { EventListener } from './events.js'
import { type EmailMessage, emailRows } from './outbox.js'

interface OrderData {
  id: number
  userId: number | null
  guest?: boolean
  email?: string | null
  status: string
  createdAt?: string
  shippingAddress?: { fullName?: string } | null
}

/**
 * The shop's e-mails, queued from its events in the change's own transaction: the customer hears of their order
 * (received, paid, shipped, cancelled; a guest with a link to the order); the admins of ADMIN_NOTIFY_EMAIL of each new
 * order and of low stock.
 */
export function emailNotifications(config: Config): EventListener {
  const admins = config.mail.adminNotify
  const tokens = createOrderTokens(config.jwtSecret, config.guests.orderLinkTtlMs)
  const shopUrl = config.sessions.shopUrl
  const listener: EventListener = async (trx, event) => {
    const messages: EmailMessage[] = []
    if (event.type === 'stock.low') {
      for (const to of admins) messages.push({ template: 'admin-low-stock', to, data: { product: event.data, threshold: config.lowStockThreshold } })
      return emailRows(messages)
    }
    if (!event.type.startsWith('order.')) return []
    // The shipment's and the refund's events carry the order beside what happened to it.
    const wrapped = event.type === 'order.fulfilled' || event.type === 'order.delivered' || event.type === 'order.refunded'
    const order = (wrapped ? (event.data as { order: OrderData }).order : event.data) as OrderData
    // A guest is written to at the order's e-mail, by the name on its address, with a fresh link to the order;
    // an account's customer at their account's e-mail (none once the user is deleted).
    const guest = order.guest === true && typeof order.email === 'string'
    const customer = guest
      ? { name: order.shippingAddress?.fullName ?? '', email: order.email as string }
      : order.userId === null
        ? undefined
        : (event.customer ?? (await trx.selectFrom('users').select(['name', 'email']).where('id', '=', order.userId).executeTakeFirst()))
    // order-received carries the token checkout answered (signed as of the order's creation: the same token); the
    // later e-mails a fresh one.
    const signedAt = event.type === 'order.created' && order.createdAt !== undefined ? Date.parse(order.createdAt) : Date.now()
    const toCustomer = (template: EmailMessage['template'], more: Record<string, unknown> = {}) => {
      if (!customer) return
      const link = guest ? { link: orderLinkUrl(shopUrl, order.id, tokens.sign(order.id, signedAt)) } : {}
      messages.push({ template, to: customer.email, data: { name: customer.name, order, ...more, ...link } })
    }
    if (event.type === 'order.created') {
      toCustomer('order-received')
      const name = guest ? `${customer?.name ? `${customer.name} ` : ''}(invitado)` : (customer?.name ?? '')
      for (const to of admins) messages.push({ template: 'admin-new-order', to, data: { name, email: customer?.email ?? '', order } })
    } else if (event.type === 'order.paid') toCustomer('order-paid')
    else if (event.type === 'order.cancelled') toCustomer('order-cancelled')
    // Each shipment recorded (a move to shipped records one) tells the customer, with its lines and tracking,
    // unless the admin said not to.
    else if (event.type === 'order.fulfilled' && event.notifyCustomer !== false)
      toCustomer('order-shipped', { fulfillment: (event.data as { fulfillment: unknown }).fulfillment })
    else if (event.type === 'order.refunded') toCustomer('order-refunded', { refund: (event.data as { refund: unknown }).refund })
    return emailRows(messages)
  }
  listener.takes = (_trx, type) => type === 'stock.low' || type.startsWith('order.')
  return listener
}
