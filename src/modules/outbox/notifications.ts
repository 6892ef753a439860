import type { Config } from '../../config.js'
import type { EventListener } from './events.js'
import { type EmailMessage, emailRows } from './outbox.js'

interface OrderData {
  id: number
  userId: number | null
  status: string
}

/**
 * The shop's e-mails, queued from its events in the change's own transaction: the customer hears of their order
 * (received, paid, shipped, cancelled); the admins of ADMIN_NOTIFY_EMAIL of each new order and of low stock.
 */
export function emailNotifications(config: Config): EventListener {
  const admins = config.mail.adminNotify
  return async (trx, event) => {
    const messages: EmailMessage[] = []
    if (event.type === 'stock.low') {
      for (const to of admins) messages.push({ template: 'admin-low-stock', to, data: { product: event.data, threshold: config.lowStockThreshold } })
      return emailRows(messages)
    }
    if (!event.type.startsWith('order.')) return []
    const order = event.data as OrderData
    const customer =
      order.userId === null ? undefined : await trx.selectFrom('users').select(['name', 'email']).where('id', '=', order.userId).executeTakeFirst()
    const toCustomer = (template: EmailMessage['template']) => {
      if (customer) messages.push({ template, to: customer.email, data: { name: customer.name, order } })
    }
    if (event.type === 'order.created') {
      toCustomer('order-received')
      for (const to of admins) messages.push({ template: 'admin-new-order', to, data: { name: customer?.name ?? '', email: customer?.email ?? '', order } })
    } else if (event.type === 'order.paid') toCustomer('order-paid')
    else if (event.type === 'order.cancelled') toCustomer('order-cancelled')
    else if (event.type === 'order.status_changed' && order.status === 'shipped') toCustomer('order-shipped')
    return emailRows(messages)
  }
}
