import { type FormEvent, useCallback, useEffect, useId, useState } from 'react'
import { useNotify, useRefresh } from 'react-admin'
import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  Checkbox,
  Chip,
  FormControlLabel,
  Link,
  List,
  ListItem,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material'
import { api } from '../api/client'
import { addNote, type Fulfillment, markDelivered, type OrderEvent, orderEvents, ship } from '../api/fulfillments'
import type { Order } from '../api/orders'
import { useCan } from '../api/permissions'
import { useCall } from './variants'

type Line = Order['items'][number]

const lineName = (line: Line | undefined, id: number) => (line ? (line.product?.name ?? line.name ?? `Product #${line.productId}`) : `Line #${id}`)

/**
 * A line's units left to ship. The order shows units shipped and refunded; a refund takes unshipped units first, so
 * while units are left every refunded one was unshipped (it will never ship), and once none are left the difference
 * is 0 or less. The API checks again: a refusal is shown.
 */
const unitsLeft = (line: Line) => Math.max(0, line.quantity - line.fulfilledQuantity - line.refundedQuantity)

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '')

const statusLabels: Record<Order['fulfillmentStatus'], string> = {
  unfulfilled: 'Nothing shipped',
  partial: 'Partly shipped',
  fulfilled: 'Everything shipped',
}

/**
 * The order's shipments: each with its lines, carrier and tracking, shipped and delivered times and a button to mark
 * it delivered; and, while the order can ship (paid or shipped, units left), a form to ship lines with their
 * quantities. Every change reads the order again (react-admin's refresh), and the timeline with it.
 */
export function Shipments({ order, onChange }: { order: Order; onChange: () => void }) {
  const call = useCall()
  const notify = useNotify()
  const refresh = useRefresh()
  const formId = useId()
  const lines = new Map(order.items.map((line) => [line.id, line]))
  const shippable = order.items.filter((line) => unitsLeft(line) > 0)
  const shipper = useCan()('fulfillments:write')
  const canShip = shipper && (order.status === 'paid' || order.status === 'shipped') && shippable.length > 0
  const [quantities, setQuantities] = useState<Record<number, string>>({})
  const [carrier, setCarrier] = useState('')
  const [trackingNumber, setTrackingNumber] = useState('')
  const [trackingUrl, setTrackingUrl] = useState('')
  const [notifyCustomer, setNotifyCustomer] = useState(true)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<{ message: string; field?: string } | null>(null)

  const changed = () => {
    refresh()
    onChange()
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(null)
    // Each line's quantity as typed, all of its units left when untouched; lines at 0 are not shipped.
    const items = shippable
      .map((line) => ({ orderItemId: line.id, quantity: Number(quantities[line.id] ?? unitsLeft(line)) }))
      .filter((item) => item.quantity !== 0)
    if (items.length === 0) {
      setError({ message: 'Choose at least one unit to ship.', field: 'items' })
      return
    }
    setBusy(true)
    const result = await call(() =>
      ship(api, order.id, {
        items,
        ...(carrier.trim() ? { carrier: carrier.trim() } : {}),
        ...(trackingNumber.trim() ? { trackingNumber: trackingNumber.trim() } : {}),
        ...(trackingUrl.trim() ? { trackingUrl: trackingUrl.trim() } : {}),
        notifyCustomer,
      }),
    )
    setBusy(false)
    if (!result.ok) {
      setError(result.failure)
      return
    }
    notify(`Shipment #${result.value.id} recorded`, { type: 'success' })
    setQuantities({})
    setCarrier('')
    setTrackingNumber('')
    setTrackingUrl('')
    changed()
  }

  const deliver = async (fulfillment: Fulfillment) => {
    setBusy(true)
    const result = await call(() => markDelivered(api, fulfillment.id))
    setBusy(false)
    if (!result.ok) notify(result.failure.message, { type: 'error' })
    else {
      notify(`Shipment #${fulfillment.id} marked delivered`, { type: 'success' })
      changed()
    }
  }

  return (
    <Card variant="outlined" component="section" aria-labelledby={`${formId}-heading`}>
      <CardContent>
        <Stack direction="row" spacing={1} sx={{ alignItems: 'center', flexWrap: 'wrap', mb: 1 }}>
          <Typography component="h3" variant="subtitle1" id={`${formId}-heading`}>
            Shipments
          </Typography>
          <Chip size="small" variant="outlined" label={statusLabels[order.fulfillmentStatus]} sx={{ color: 'text.primary' }} />
        </Stack>
        {order.fulfillments.length === 0 ? (
          <Typography>No shipment recorded.</Typography>
        ) : (
          <List dense disablePadding aria-label="Shipments">
            {order.fulfillments.map((fulfillment) => (
              <ListItem key={fulfillment.id} disableGutters sx={{ display: 'block', borderBottom: 1, borderColor: 'divider', py: 1 }}>
                <Typography sx={{ fontWeight: 600 }}>
                  Shipment #{fulfillment.id} · shipped {when(fulfillment.shippedAt)}
                </Typography>
                <Typography variant="body2">
                  {fulfillment.items.map((item) => `${item.quantity} × ${lineName(lines.get(item.orderItemId), item.orderItemId)}`).join(', ')}
                </Typography>
                <Typography variant="body2">
                  {fulfillment.carrier ?? 'No carrier'}
                  {fulfillment.trackingNumber && ` · tracking ${fulfillment.trackingNumber}`}
                  {fulfillment.trackingUrl && (
                    <>
                      {' · '}
                      <Link href={fulfillment.trackingUrl} target="_blank" rel="noreferrer">
                        Track shipment #{fulfillment.id}
                      </Link>
                    </>
                  )}
                </Typography>
                {fulfillment.deliveredAt ? (
                  <Typography variant="body2">Delivered {when(fulfillment.deliveredAt)}</Typography>
                ) : (
                  shipper && (
                    <Button size="small" variant="outlined" disabled={busy} onClick={() => void deliver(fulfillment)} sx={{ mt: 0.5 }}>
                      Record delivery of shipment #{fulfillment.id}
                    </Button>
                  )
                )}
              </ListItem>
            ))}
          </List>
        )}
        {canShip && (
          <Box component="form" onSubmit={(event) => void submit(event)} aria-labelledby={`${formId}-ship`} sx={{ mt: 2 }}>
            <Typography component="h4" variant="subtitle2" id={`${formId}-ship`} gutterBottom>
              Ship items
            </Typography>
            <Box sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
              <Table size="small" aria-label="Units to ship">
                <TableHead>
                  <TableRow>
                    <TableCell>Product</TableCell>
                    <TableCell align="right">Left to ship</TableCell>
                    <TableCell align="right">Ship now</TableCell>
                  </TableRow>
                </TableHead>
                <TableBody>
                  {shippable.map((line) => (
                    <TableRow key={line.id}>
                      <TableCell>
                        {lineName(line, line.id)}
                        {line.variantTitle && ` (${line.variantTitle})`}
                      </TableCell>
                      <TableCell align="right">{unitsLeft(line)}</TableCell>
                      <TableCell align="right">
                        <TextField
                          type="number"
                          size="small"
                          value={quantities[line.id] ?? String(unitsLeft(line))}
                          onChange={(event) => setQuantities((current) => ({ ...current, [line.id]: event.target.value }))}
                          slotProps={{ htmlInput: { min: 0, max: unitsLeft(line), 'aria-label': `Units of ${lineName(line, line.id)} to ship` } }}
                          sx={{ width: 96 }}
                        />
                      </TableCell>
                    </TableRow>
                  ))}
                </TableBody>
              </Table>
            </Box>
            <Stack direction={{ xs: 'column', md: 'row' }} spacing={2} sx={{ mt: 2 }}>
              <TextField
                label="Carrier"
                size="small"
                value={carrier}
                onChange={(event) => setCarrier(event.target.value)}
                error={error?.field === 'carrier'}
                helperText={error?.field === 'carrier' ? error.message : undefined}
                slotProps={{ htmlInput: { maxLength: 100 } }}
              />
              <TextField
                label="Tracking number"
                size="small"
                value={trackingNumber}
                onChange={(event) => setTrackingNumber(event.target.value)}
                error={error?.field === 'trackingNumber'}
                helperText={error?.field === 'trackingNumber' ? error.message : undefined}
                slotProps={{ htmlInput: { maxLength: 100 } }}
              />
              <TextField
                label="Tracking URL"
                size="small"
                value={trackingUrl}
                onChange={(event) => setTrackingUrl(event.target.value)}
                error={error?.field === 'trackingUrl'}
                helperText={error?.field === 'trackingUrl' ? error.message : undefined}
                slotProps={{ htmlInput: { maxLength: 100 } }}
                sx={{ flex: 1 }}
              />
            </Stack>
            <FormControlLabel
              control={<Checkbox checked={notifyCustomer} onChange={(event) => setNotifyCustomer(event.target.checked)} />}
              label="E-mail the customer"
            />
            {error && (
              <Alert severity="error" role="alert" sx={{ my: 1 }}>
                {error.message}
              </Alert>
            )}
            <Box>
              <Button type="submit" variant="contained" disabled={busy}>
                Ship
              </Button>
            </Box>
          </Box>
        )}
      </CardContent>
    </Card>
  )
}

/** What an entry says, in a sentence. */
function sentence(event: OrderEvent, order: Order): string {
  const data = event.data as Record<string, unknown>
  const lines = new Map(order.items.map((line) => [line.id, line]))
  switch (event.type) {
    case 'order.status_changed':
      return `Status ${String(data.from)} → ${String(data.to)}`
    case 'order.fulfilled': {
      const fulfillment = data.fulfillment as Fulfillment | undefined
      const items = (fulfillment?.items ?? []).map((item) => `${item.quantity} × ${lineName(lines.get(item.orderItemId), item.orderItemId)}`).join(', ')
      return `Shipment #${fulfillment?.id ?? ''} sent${fulfillment?.carrier ? ` with ${fulfillment.carrier}` : ''}: ${items}`
    }
    case 'fulfillment.delivered':
      return `Shipment #${String(data.fulfillmentId)} delivered`
    case 'fulfillment.updated':
      return `Shipment #${String(data.fulfillmentId)} tracking changed`
    case 'order.refunded':
      return `Refunded ${String(data.amount)} ${typeof data.currency === 'string' ? data.currency : ''}`.trim()
    case 'payment.disputed':
      return 'Payment disputed'
    case 'note':
      return String(data.text)
    default:
      return event.type
  }
}

const actorName = (event: OrderEvent) =>
  event.actor.type === 'system' ? 'The shop' : event.actor.type === 'guest' ? `Guest ${event.actor.name ?? ''}` : (event.actor.name ?? 'Deleted user')

/** The order's timeline, oldest first, with a form to add a note. `version` reads it again when it changes. */
export function Timeline({ order, version }: { order: Order; version: number }) {
  const call = useCall()
  const headingId = useId()
  const [events, setEvents] = useState<OrderEvent[] | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [text, setText] = useState('')
  const [noteError, setNoteError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  // Notes are orders:write; reading the timeline, orders:read (every role that sees the order).
  const writer = useCan()('orders:write')

  const load = useCallback(async () => {
    const result = await call(() => orderEvents(api, order.id))
    if (result.ok) {
      setEvents(result.value)
      setLoadError(null)
    } else setLoadError(result.failure.message)
  }, [call, order.id])

  useEffect(() => {
    void load()
    // `updatedAt` and the shipments change with every move: the timeline follows them.
  }, [load, version, order.updatedAt, order.fulfillments.length])

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setNoteError(null)
    setBusy(true)
    const result = await call(() => addNote(api, order.id, text))
    setBusy(false)
    if (!result.ok) {
      setNoteError(result.failure.message)
      return
    }
    setText('')
    setEvents((current) => [...(current ?? []), result.value])
  }

  return (
    <Card variant="outlined" component="section" aria-labelledby={headingId}>
      <CardContent>
        <Typography component="h3" variant="subtitle1" id={headingId} gutterBottom>
          Timeline
        </Typography>
        {loadError && (
          <Alert severity="error" role="alert">
            {loadError}
          </Alert>
        )}
        {events && events.length === 0 && <Typography>Nothing has happened to this order yet.</Typography>}
        {events && events.length > 0 && (
          <List dense disablePadding component="ol" aria-label="Timeline">
            {events.map((event) => (
              <ListItem key={event.id} disableGutters sx={{ display: 'block' }}>
                <Typography variant="body2" sx={{ color: 'text.secondary' }}>
                  <time dateTime={event.at}>{when(event.at)}</time> · {actorName(event)}
                </Typography>
                <Typography sx={event.type === 'note' ? { whiteSpace: 'pre-wrap', fontStyle: 'italic' } : undefined}>{sentence(event, order)}</Typography>
              </ListItem>
            ))}
          </List>
        )}
        {writer && (
          <Box component="form" onSubmit={(event) => void submit(event)} sx={{ mt: 2 }}>
            <TextField
              label="Note"
              multiline
              minRows={2}
              fullWidth
              value={text}
              onChange={(event) => setText(event.target.value)}
              error={noteError !== null}
              helperText={noteError ?? 'Seen by staff only.'}
              slotProps={{ htmlInput: { maxLength: 2000 } }}
            />
            <Button type="submit" variant="outlined" disabled={busy || text.trim() === ''} sx={{ mt: 1 }}>
              Add note
            </Button>
          </Box>
        )}
      </CardContent>
    </Card>
  )
}
