import type { EmailMessage } from '../outbox.js'

/** What the templates show, built from a queued e-mail's data: amounts formatted, names resolved. */
export interface ViewContext {
  currency: string
  publicUrl: string
}

interface OrderLike {
  id?: number
  total?: number
  subtotal?: number
  shippingTotal?: number
  status?: string
  note?: string | null
  items?: Array<{ productId?: number; quantity?: number; price?: number; name?: string | null; product?: { name?: string } }>
  /** The order's snapshot of its address (docs/api.md): `fullName` is the recipient's. */
  shippingAddress?: { fullName?: string; line1?: string; line2?: string | null; city?: string; postalCode?: string; country?: string } | null
  shippingMethod?: { name?: string } | null
}

const STATUS_LABELS: Record<string, string> = {
  pending: 'pendiente de pago',
  paid: 'pagado',
  shipped: 'enviado',
  delivered: 'entregado',
  cancelled: 'cancelado',
}

/** One formatter per currency: building an Intl.NumberFormat costs far more than formatting with it. */
const formatters = new Map<string, Intl.NumberFormat>()

function money(amount: unknown, currency: string): string {
  if (typeof amount !== 'number') return ''
  let formatter = formatters.get(currency)
  if (!formatter) {
    formatter = new Intl.NumberFormat('es-ES', { style: 'currency', currency })
    formatters.set(currency, formatter)
  }
  return formatter.format(amount)
}

function orderView(order: OrderLike, currency: string) {
  const address = order.shippingAddress
  return {
    id: order.id,
    total: money(order.total, currency),
    subtotal: order.subtotal === undefined ? '' : money(order.subtotal, currency),
    shippingTotal: order.shippingTotal === undefined ? '' : money(order.shippingTotal, currency),
    status: STATUS_LABELS[order.status ?? ''] ?? order.status ?? '',
    note: order.note ?? '',
    items: (order.items ?? []).map((item) => ({
      name: item.name ?? item.product?.name ?? `Producto ${item.productId ?? ''}`,
      quantity: item.quantity,
      price: money(item.price, currency),
      lineTotal: typeof item.price === 'number' && typeof item.quantity === 'number' ? money(Math.round(item.price * item.quantity * 100) / 100, currency) : '',
    })),
    address: address
      ? {
          name: address.fullName ?? '',
          street: [address.line1, address.line2].filter(Boolean).join(', '),
          city: [address.postalCode, address.city].filter(Boolean).join(' '),
          country: address.country ?? '',
        }
      : null,
    method: order.shippingMethod?.name ?? '',
  }
}

interface FulfillmentLike {
  carrier?: string | null
  trackingNumber?: string | null
  trackingUrl?: string | null
  items?: Array<{ orderItemId?: number; quantity?: number }>
}

/** A shipment's carrier, tracking and lines, each line named as the order names it. */
function fulfillmentView(fulfillment: FulfillmentLike, order: OrderLike) {
  const lines = new Map((order.items ?? []).map((item) => [(item as { id?: number }).id, item]))
  return {
    carrier: fulfillment.carrier ?? '',
    trackingNumber: fulfillment.trackingNumber ?? '',
    trackingUrl: fulfillment.trackingUrl ?? '',
    items: (fulfillment.items ?? []).map((item) => {
      const line = lines.get(item.orderItemId)
      return { name: line?.name ?? line?.product?.name ?? `Artículo ${item.orderItemId ?? ''}`, quantity: item.quantity }
    }),
  }
}

interface RefundLike {
  amount?: number
  shippingAmount?: number
  reason?: string | null
  items?: Array<{ orderItemId?: number; quantity?: number; amount?: number }>
}

/**
 * A refund as its e-mail shows it. Its amounts read the Spanish way with a plain space (`23,00 €`), as the subject
 * quotes them: Intl puts a no-break space before the symbol, which some mail clients show as a stray character.
 */
function refundView(refund: RefundLike, currency: string) {
  const plain = (amount: unknown) => money(amount, currency).replace(/\u00a0/g, ' ')
  return {
    amount: plain(refund.amount),
    shippingAmount: typeof refund.shippingAmount === 'number' && refund.shippingAmount > 0 ? plain(refund.shippingAmount) : '',
    reason: refund.reason ?? '',
    items: (refund.items ?? []).map((item) => ({ orderItemId: item.orderItemId, quantity: item.quantity, amount: plain(item.amount) })),
  }
}

export function emailView(message: EmailMessage, context: ViewContext): Record<string, unknown> {
  const data = message.data
  const view: Record<string, unknown> = { ...data, shopUrl: context.publicUrl }
  if (data.order && typeof data.order === 'object') view.order = orderView(data.order, context.currency)
  if (data.fulfillment && typeof data.fulfillment === 'object')
    view.fulfillment = fulfillmentView(data.fulfillment, data.order && typeof data.order === 'object' ? data.order : {})
  if (data.refund && typeof data.refund === 'object') view.refund = refundView(data.refund, context.currency)
  return view
}
