import type { Config } from '../../config.js'
import { createOrderTokens, orderLinkUrl } from '../orders/order-token.js'
import type { EventListener } from '../outbox/events.js'
import { type EmailMessage, type EmailTemplate, emailRows } from '../outbox/outbox.js'

interface OrderData {
  id: number
  userId: number | null
  guest?: boolean
  email?: string | null
  shippingAddress?: { fullName?: string } | null
  items?: Array<{ id: number; name?: string | null; variantTitle?: string | null }>
}

interface ReturnData {
  id: number
  status: string
  reason: string | null
  rejectionReason?: string | null
  items: Array<{ orderItemId: number; quantity: number; receivedQuantity: number | null }>
}

interface WithdrawalData {
  id: number
  email: string
  name: string
  statement: string
  receivedAt: string
  deadline: string | null
  items: Array<{ quantity: number; name: string | null; variantTitle: string | null }>
}

const customerTemplates: Record<string, EmailTemplate> = {
  'return.requested': 'return-requested',
  'return.approved': 'return-approved',
  'return.rejected': 'return-rejected',
  'return.received': 'return-received',
}

/** `2 × Taza (Roja)`: a line as the e-mails list it. */
const lineText = (quantity: number, name: string | null | undefined, variantTitle: string | null | undefined) =>
  `${quantity} × ${name ?? ''}${variantTitle ? ` (${variantTitle})` : ''}`

/**
 * The e-mails of returns and withdrawals, queued from their events in the change's own transaction: the customer
 * hears of each move of their return (a guest at the order's e-mail, with a fresh link to the order), the admins of
 * ADMIN_NOTIFY_EMAIL of each requested return; a withdrawal's receipt goes to the e-mail it was declared with (its
 * time also in the shop's zone), and the admins are told.
 */
export function afterSaleNotifications(config: Config): EventListener {
  const admins = config.mail.adminNotify
  const tokens = createOrderTokens(config.jwtSecret, config.guests.orderLinkTtlMs)
  const shopUrl = config.sessions.shopUrl
  const localTime = new Intl.DateTimeFormat('es-ES', { timeZone: config.shopTimezone, dateStyle: 'long', timeStyle: 'long' })
  const listener: EventListener = async (trx, event) => {
    const messages: EmailMessage[] = []
    if (event.type === 'withdrawal.received') {
      const { order, withdrawal } = event.data as { order: OrderData; withdrawal: WithdrawalData }
      const data = {
        order: { id: order.id },
        withdrawal: {
          ...withdrawal,
          receivedAtLocal: `${localTime.format(new Date(withdrawal.receivedAt))} (${config.shopTimezone})`,
          lines: withdrawal.items.map((item) => ({ text: lineText(item.quantity, item.name, item.variantTitle) })),
        },
      }
      messages.push({ template: 'withdrawal-receipt', to: withdrawal.email, data: { ...data, name: withdrawal.name } })
      for (const to of admins) messages.push({ template: 'admin-withdrawal-received', to, data })
      return emailRows(messages)
    }
    const template = customerTemplates[event.type]
    if (!template) return []
    const { order, return: ret } = event.data as { order: OrderData; return: ReturnData }
    const names = new Map((order.items ?? []).map((item) => [item.id, item]))
    const returnView = {
      ...ret,
      lines: ret.items.map((item) => {
        const line = names.get(item.orderItemId)
        const quantity = ret.status === 'received' ? (item.receivedQuantity ?? 0) : item.quantity
        return { text: lineText(quantity, line?.name, line?.variantTitle) }
      }),
    }
    const guest = order.guest === true && typeof order.email === 'string'
    const customer = guest
      ? { name: order.shippingAddress?.fullName ?? '', email: order.email as string }
      : order.userId === null
        ? undefined
        : await trx.selectFrom('users').select(['name', 'email']).where('id', '=', order.userId).executeTakeFirst()
    if (customer) {
      const link = guest ? { link: orderLinkUrl(shopUrl, order.id, tokens.sign(order.id)) } : {}
      messages.push({ template, to: customer.email, data: { name: customer.name, order: { id: order.id }, return: returnView, ...link } })
    }
    if (event.type === 'return.requested') {
      for (const to of admins)
        messages.push({
          template: 'admin-return-requested',
          to,
          data: { name: customer?.name ?? '', email: customer?.email ?? '', order: { id: order.id }, return: returnView },
        })
    }
    return emailRows(messages)
  }
  listener.takes = (_trx, type) => type === 'withdrawal.received' || customerTemplates[type] !== undefined
  return listener
}
