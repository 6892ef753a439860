import { type ReactNode, useState } from 'react'
import {
  Confirm,
  Datagrid,
  DateField,
  FunctionField,
  List,
  NumberField,
  SelectInput,
  SimpleList,
  Show,
  TextInput,
  TopToolbar,
  useGetOne,
  useListContext,
  useNotify,
  useRecordContext,
  useRefresh,
  useUpdate,
} from 'react-admin'
import { Box, Button, Card, CardContent, Chip, Stack, Table, TableBody, TableCell, TableHead, TableRow, Typography } from '@mui/material'
import { errorCode } from '../api/answers'
import { ORDER_STATUSES, PAYMENT_STATUSES, type Order, type OrderStatus } from '../api/orders'
import { filtersOf, idValue } from '../api/resource'
import type { User } from '../api/users'
import { OrderRefunds } from './refunds'
import { useCan } from '../api/permissions'
import { useSmallScreen } from './small'
import { Shipments, Timeline } from './fulfillments'

const statusChoices = ORDER_STATUSES.map((status) => ({ id: status, name: status[0]!.toUpperCase() + status.slice(1) }))

const moveLabels: Record<OrderStatus, string> = {
  pending: 'Mark pending',
  paid: 'Mark as paid',
  shipped: 'Mark as shipped',
  delivered: 'Mark as delivered',
  cancelled: 'Cancel order',
}

const money = { minimumFractionDigits: 2, maximumFractionDigits: 2 } as const
const formatMoney = (value: number | undefined) => (value ?? 0).toLocaleString(undefined, money)

function StatusChip({ status }: { status: OrderStatus }) {
  const colors: Record<OrderStatus, 'default' | 'warning' | 'info' | 'success' | 'error'> = {
    pending: 'warning',
    paid: 'info',
    shipped: 'success',
    delivered: 'success',
    cancelled: 'default',
  }
  return <Chip size="small" label={status} color={colors[status]} variant="outlined" sx={{ fontWeight: 600, color: 'text.primary' }} />
}

const guestChoices = [
  { id: 'true', name: 'Guests' },
  { id: 'false', name: 'Accounts' },
]

const shippingChoices = [
  { id: 'unfulfilled', name: 'Nothing shipped' },
  { id: 'partial', name: 'Partly shipped' },
  { id: 'fulfilled', name: 'Everything shipped' },
]

const filters = [
  <SelectInput key="status" source="status" choices={statusChoices} alwaysOn emptyText="All statuses" label="Status" />,
  // GET /orders?fulfillmentStatus=: what has shipped of each order.
  <SelectInput key="fulfillmentStatus" source="fulfillmentStatus" choices={shippingChoices} alwaysOn emptyText="All" label="Shipping" />,
  // GET /orders?guest=true|false: guest orders only, or account orders only.
  <SelectInput key="guest" source="guest" choices={guestChoices} alwaysOn emptyText="All" label="Guest" />,
  // GET /orders?paymentStatus=: by the payment's status (partially_refunded and refunded follow the refunds).
  <SelectInput
    key="paymentStatus"
    source="paymentStatus"
    choices={PAYMENT_STATUSES.map((status) => ({ id: status, name: status.replace('_', ' ') }))}
    alwaysOn
    emptyText="All payments"
    label="Payment"
  />,
  // GET /orders?email=: a guest's orders, or those of the account that has the e-mail now.
  <TextInput key="email" source="email" label="E-mail" alwaysOn resettable={false} />,
]

/** The customer as text: "Ana <ana@…>", or for a guest order (no account) "Guest <guest@…>". */
const customer = (order: Order) =>
  order.guest
    ? `Guest <${order.email ?? ''}>`
    : order.customer
      ? `${order.customer.name} <${order.customer.email}>`
      : order.userId !== null
        ? `User #${order.userId}`
        : 'Deleted account'

/** Where the customer is shown: a guest order says "Guest" (a chip) and the e-mail the guest gave. */
function CustomerName({ order }: { order: Order }) {
  if (!order.guest) return <span>{customer(order)}</span>
  return (
    <Box component="span" sx={{ display: 'inline-flex', alignItems: 'center', gap: 1, flexWrap: 'wrap' }}>
      <Chip component="span" size="small" label="Guest" variant="outlined" sx={{ color: 'text.primary' }} />
      <span>{order.email}</span>
    </Box>
  )
}

/**
 * The customer the list is filtered by (the Users page's "Orders" link: `?filter={"userId":…}`), said above the list,
 * with a way back to every order.
 */
function CustomerFilter() {
  const list = useListContext<Order>()
  const filter = filtersOf({ filter: list.filterValues })
  const userId = idValue(filter.userId)
  const { data: user } = useGetOne<User>('users', { id: userId ?? 0 }, { enabled: userId !== undefined })
  if (userId === undefined) return null
  const everyOrder = () => {
    const { userId: _customer, ...others } = filter
    list.setFilters(others, list.displayedFilters)
  }
  return (
    <Box sx={{ px: 2, pt: 1 }}>
      <Chip
        color="primary"
        variant="outlined"
        label={`Customer: ${user ? `${user.name} <${user.email}>` : `user #${userId}`}`}
        onDelete={everyOrder}
        // The label wraps on a phone rather than widening the page.
        sx={{ maxWidth: '100%', height: 'auto', py: 0.5, '& .MuiChip-label': { whiteSpace: 'normal' } }}
      />
      <Button size="small" onClick={everyOrder} sx={{ ml: 1 }}>
        Every customer
      </Button>
    </Box>
  )
}

/** Orders, newest first, by status, customer, guest or account and e-mail, with their customer ("Guest" and the e-mail for a guest). */
export function OrderList() {
  const small = useSmallScreen()
  return (
    <List filters={filters} perPage={25} sort={{ field: 'createdAt', order: 'DESC' }} exporter={false} empty={false}>
      <CustomerFilter />
      {small ? (
        <SimpleList<Order>
          primaryText={(order) => `#${order.id} · ${order.status} · ${formatMoney(order.total)}`}
          secondaryText={(order) => <CustomerName order={order} />}
          tertiaryText={(order) => new Date(order.createdAt).toLocaleDateString()}
          linkType="show"
        />
      ) : (
        <Datagrid rowClick="show" bulkActionButtons={false} aria-label="Orders">
          <FunctionField source="id" label="Order" sortable={false} render={(order: Order) => `#${order.id}`} />
          <FunctionField label="Customer" render={(order: Order) => <CustomerName order={order} />} />
          <NumberField source="total" options={money} sortable={false} />
          <FunctionField source="status" sortable={false} render={(order: Order) => <StatusChip status={order.status} />} />
          <DateField source="createdAt" label="Placed" showTime sortable={false} />
        </Datagrid>
      )}
    </List>
  )
}

/** The buttons for the moves the API allows from the order's status; cancelling a paid order says it refunds. */
function StatusMoves() {
  const order = useRecordContext<Order>()
  const [update, { isPending }] = useUpdate()
  const notify = useNotify()
  const refresh = useRefresh()
  const [confirming, setConfirming] = useState<OrderStatus | null>(null)
  const can = useCan()
  if (!order || !can('orders:write')) return null
  // Cancelling a paid order refunds it: refunds:write as well.
  const moves = (order.nextStatuses ?? []).filter((status) => status !== 'cancelled' || order.status !== 'paid' || can('refunds:write'))
  const move = (status: OrderStatus) =>
    update(
      'orders',
      { id: order.id, data: { status }, previousData: order },
      {
        mutationMode: 'pessimistic',
        onSuccess: () => {
          notify(`Order #${order.id} is now ${status}`, { type: 'success' })
          refresh()
        },
        onError: (error) => {
          notify(error instanceof Error ? error.message : 'The status could not be changed', { type: 'error' })
          // The order moved meanwhile (another admin, a payment): read it again, so the buttons offer today's moves.
          if (errorCode(error) === 'transition_not_allowed') refresh()
        },
      },
    )
  const cancelText =
    order.status === 'paid'
      ? `Order #${order.id} is paid: cancelling it refunds ${
          (order.payment?.refundedAmount ?? 0) > 0 ? 'what is left of the payment, ' : 'the payment of '
        }${formatMoney((cents(order.payment?.amount ?? order.total) - cents(order.payment?.refundedAmount)) / 100)} to the customer and puts the items back in stock.`
      : `Cancelling order #${order.id} puts its items back in stock.`
  return (
    <TopToolbar>
      {/* The moves the API allows now: its own table, answered with the order (nextStatuses). */}
      {moves.map((status) => (
        <Button
          key={status}
          variant={status === 'cancelled' ? 'outlined' : 'contained'}
          color={status === 'cancelled' ? 'error' : 'primary'}
          disabled={isPending}
          onClick={() => (status === 'cancelled' ? setConfirming(status) : void move(status))}
        >
          {moveLabels[status]}
        </Button>
      ))}
      <Confirm
        isOpen={confirming !== null}
        title={order.status === 'paid' ? 'Cancel and refund this order?' : 'Cancel this order?'}
        content={cancelText}
        confirm="Cancel order"
        cancel="Keep order"
        onConfirm={() => {
          setConfirming(null)
          void move('cancelled')
        }}
        onClose={() => setConfirming(null)}
      />
    </TopToolbar>
  )
}

function OrderDetail() {
  const order = useRecordContext<Order>()
  // Bumped by every shipment change, so the timeline reads its new entries.
  const [version, setVersion] = useState(0)
  if (!order) return null
  const address = order.shippingAddress
  return (
    <Stack spacing={2} sx={{ p: 2 }}>
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={2} sx={{ alignItems: { sm: 'center' } }}>
        <Typography component="h2" variant="h6">
          Order #{order.id}
        </Typography>
        <StatusChip status={order.status} />
        <Typography variant="body2">Placed {new Date(order.createdAt).toLocaleString()}</Typography>
      </Stack>
      <Typography>
        Customer: <CustomerName order={order} />
        {order.guest && ' (ordered without an account)'}
      </Typography>
      <OrderLines order={order} />
      <OrderTotals order={order} />
      <Stack direction={{ xs: 'column', md: 'row' }} spacing={2}>
        <Card variant="outlined" sx={{ flex: 1 }}>
          <CardContent>
            <Typography component="h3" variant="subtitle1" gutterBottom>
              Shipping address
            </Typography>
            {address ? (
              <Typography component="address" sx={{ fontStyle: 'normal', whiteSpace: 'pre-line' }}>
                {[address.fullName, address.line1, address.line2, `${address.postalCode} ${address.city}`, address.region, address.country, address.phone]
                  .filter(Boolean)
                  .join('\n')}
              </Typography>
            ) : (
              <Typography>No shipping address on this order.</Typography>
            )}
          </CardContent>
        </Card>
        <Card variant="outlined" sx={{ flex: 1 }}>
          <CardContent>
            <Typography component="h3" variant="subtitle1" gutterBottom>
              Shipping method
            </Typography>
            <Typography>
              {order.shippingMethod ? `${order.shippingMethod.name} — ${formatMoney(order.shippingTotal)}` : 'No shipping method on this order.'}
            </Typography>
            {order.note && <Typography sx={{ mt: 1 }}>Note: {order.note}</Typography>}
          </CardContent>
        </Card>
        <Card variant="outlined" sx={{ flex: 1 }}>
          <CardContent>
            <Typography component="h3" variant="subtitle1" gutterBottom>
              Payment
            </Typography>
            <PaymentSummary order={order} />
          </CardContent>
        </Card>
      </Stack>
      <Shipments order={order} onChange={() => setVersion((current) => current + 1)} />
      <Timeline order={order} version={version} />
      <OrderRefunds order={order} />
    </Stack>
  )
}

const minus = (value: number) => (value > 0 ? `−${formatMoney(value)}` : formatMoney(value))
/** Cents of an amount the API answered with 2 decimals, for the few differences the page shows. */
const cents = (value: number | undefined) => Math.round((value ?? 0) * 100)

/** The lines as bought: product, variant and SKU, then quantity, unit price, subtotal, the code's share, tax and total. */
function OrderLines({ order }: { order: Order }) {
  return (
    // Its own width (0) leaves the page's to the card: on a phone the lines scroll sideways inside it, a region the
    // keyboard reaches (it holds nothing focusable of its own) to scroll it with the arrow keys.
    <Box component="section" tabIndex={0} aria-label="Order lines" sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
      <Table size="small" aria-label="Order lines">
        <TableHead>
          <TableRow>
            <TableCell>Product</TableCell>
            <TableCell align="right">Quantity</TableCell>
            <TableCell align="right">Unit price</TableCell>
            <TableCell align="right">Subtotal</TableCell>
            <TableCell align="right">Discount</TableCell>
            <TableCell align="right">Tax</TableCell>
            <TableCell align="right">Total</TableCell>
          </TableRow>
        </TableHead>
        <TableBody>
          {order.items.map((item) => (
            <TableRow key={item.id}>
              <TableCell>
                {item.product?.name ?? item.name ?? `Product #${item.productId} (deleted)`}
                {(item.variantTitle || item.sku) && (
                  <Typography variant="body2" component="span" sx={{ display: 'block', color: 'text.secondary' }}>
                    {[item.variantTitle, item.sku && `SKU ${item.sku}`].filter(Boolean).join(' · ')}
                  </Typography>
                )}
              </TableCell>
              <TableCell align="right">{item.quantity}</TableCell>
              <TableCell align="right">{formatMoney(item.price)}</TableCell>
              <TableCell align="right">{formatMoney((cents(item.price) * item.quantity) / 100)}</TableCell>
              <TableCell align="right">{minus(item.discount ?? 0)}</TableCell>
              <TableCell align="right">
                {formatMoney(item.tax)}
                {item.taxRate > 0 && ` (${item.taxRate}%)`}
              </TableCell>
              <TableCell align="right">{formatMoney(item.total)}</TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
    </Box>
  )
}

function discountLabel(discount: NonNullable<Order['discount']>) {
  if (discount.type === 'percent') return `${discount.code}, ${discount.value}% off`
  if (discount.type === 'fixed') return `${discount.code}, ${formatMoney(discount.value ?? 0)} off`
  return `${discount.code}, free shipping`
}

/**
 * The order's totals as the API answered them: subtotal, the code's discount, shipping (and a free-shipping code's
 * discount of it), the taxes by tax line (added to the total when prices exclude tax, a part of it when they include
 * it) and the total.
 */
function OrderTotals({ order }: { order: Order }) {
  const shippingDiscount = order.shippingDiscount ?? 0
  const goodsDiscount = (cents(order.discountTotal) - cents(shippingDiscount)) / 100
  const row = (label: ReactNode, amount: ReactNode, strong = false) => (
    <TableRow>
      <TableCell component="th" scope="row" sx={strong ? { fontWeight: 700 } : undefined}>
        {label}
      </TableCell>
      <TableCell align="right" sx={strong ? { fontWeight: 700 } : undefined}>
        {amount}
      </TableCell>
    </TableRow>
  )
  return (
    <Box sx={{ overflowX: 'auto', maxWidth: 640, alignSelf: { md: 'flex-end' }, width: '100%' }}>
      <Table size="small" aria-label="Order totals">
        <TableBody>
          {row('Subtotal', formatMoney(order.subtotal))}
          {(order.discount || goodsDiscount > 0) && row(order.discount ? `Discount (${discountLabel(order.discount)})` : 'Discount', minus(goodsDiscount))}
          {row(`Shipping${order.shippingMethod ? ` (${order.shippingMethod.name})` : ''}`, formatMoney(order.shippingTotal))}
          {shippingDiscount > 0 && row('Shipping discount', minus(shippingDiscount))}
          {(order.taxLines ?? []).map((line) =>
            row(
              `${order.pricesIncludeTax ? 'Tax included' : 'Tax'}: ${line.name} (${line.taxClass}, ${line.rate}%) on ${formatMoney(line.base)}`,
              formatMoney(line.amount),
            ),
          )}
          {(order.taxLines ?? []).length > 1 && row(order.pricesIncludeTax ? 'Taxes included' : 'Taxes', formatMoney(order.taxTotal))}
          {row('Total', formatMoney(order.total), true)}
        </TableBody>
      </Table>
    </Box>
  )
}

function PaymentSummary({ order }: { order: Order }) {
  const payment = order.payment
  if (!payment) return <Typography>Manual: the order counts as paid once it is marked as paid{order.status === 'pending' ? ' (not yet)' : ''}.</Typography>
  return (
    <Typography>
      {payment.provider === 'stripe' ? 'Stripe' : 'Manual'}: {payment.status.replace('_', ' ')}, {formatMoney(payment.amount)} {payment.currency.toUpperCase()}
      {payment.refundedAmount > 0 && ` (${formatMoney(payment.refundedAmount)} refunded)`}
    </Typography>
  )
}

export function OrderShow() {
  return (
    <Show actions={<StatusMoves />} title={<OrderTitle />}>
      <OrderDetail />
    </Show>
  )
}

function OrderTitle() {
  const order = useRecordContext<Order>()
  return <span>{order ? `Order #${order.id}` : 'Order'}</span>
}
