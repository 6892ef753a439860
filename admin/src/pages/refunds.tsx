import { useId, useState } from 'react'
import { Confirm, useLogoutIfAccessDenied, useNotify, useRefresh } from 'react-admin'
import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  Checkbox,
  FormControlLabel,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material'
import type { Order } from '../api/orders'
import { useCan } from '../api/permissions'
import { createRefund, previewRefund, type Refund, type RefundPreview, type RefundRequest } from '../api/refunds'

const money = { minimumFractionDigits: 2, maximumFractionDigits: 2 } as const
const formatMoney = (value: number | undefined) => (value ?? 0).toLocaleString(undefined, money)

type Line = Order['items'][number]
const lineName = (line: Line) => [line.product?.name ?? line.name ?? `Product #${line.productId}`, line.variantTitle].filter(Boolean).join(' · ')

/** A new Idempotency-Key: one per refund the form is about to make. */
const newKey = () => (globalThis.crypto?.randomUUID ? globalThis.crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`)

/**
 * The order's refunds, and the form that refunds by line: units of each line (and whether they go back into stock),
 * some shipping and a reason. The amount is the API's preview (POST /orders/:id/refunds/preview), shown before the
 * refund is confirmed; any change to the form asks for a new preview. One Idempotency-Key is kept per refund until
 * it succeeds, so sending it again after a failure never refunds twice.
 */
export function OrderRefunds({ order }: { order: Order }) {
  const status = order.payment?.status
  const refundable = status === 'paid' || status === 'partially_refunded'
  const can = useCan()
  return (
    <Card variant="outlined" component="section" aria-labelledby={`refunds-${order.id}`}>
      <CardContent>
        <Typography id={`refunds-${order.id}`} component="h3" variant="subtitle1" gutterBottom>
          Refunds
        </Typography>
        <Typography sx={{ mb: 1 }}>
          Refunded {formatMoney(order.payment?.refundedAmount)} of {formatMoney(order.payment?.amount)} {order.currency}
          {status ? ` (payment ${status.replace('_', ' ')})` : ''}.
        </Typography>
        <RefundList order={order} />
        {!can('refunds:write') ? null : refundable ? (
          <RefundForm order={order} />
        ) : (
          <Typography sx={{ mt: 1 }}>There is no payment left to refund on this order.</Typography>
        )}
      </CardContent>
    </Card>
  )
}

function RefundList({ order }: { order: Order }) {
  const refunds: Refund[] = order.refunds ?? []
  if (refunds.length === 0) return <Typography>No refunds yet.</Typography>
  const names = new Map(order.items.map((line) => [line.id, lineName(line)]))
  return (
    <Box component="section" tabIndex={0} aria-label="Refunds made" sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
      <Table size="small" aria-label="Refunds made">
        <TableHead>
          <TableRow>
            <TableCell>Date</TableCell>
            <TableCell align="right">Amount</TableCell>
            <TableCell>Items</TableCell>
            <TableCell align="right">Shipping</TableCell>
            <TableCell>Reason</TableCell>
            <TableCell>By</TableCell>
          </TableRow>
        </TableHead>
        <TableBody>
          {refunds.map((refund) => (
            <TableRow key={refund.id}>
              <TableCell>{new Date(refund.createdAt).toLocaleString()}</TableCell>
              <TableCell align="right">{formatMoney(refund.amount)}</TableCell>
              <TableCell>
                {refund.items.length === 0
                  ? '—'
                  : refund.items
                      .map((item) => `${item.quantity} × ${names.get(item.orderItemId) ?? `#${item.orderItemId}`}${item.restock ? ' (restocked)' : ''}`)
                      .join('; ')}
              </TableCell>
              <TableCell align="right">{formatMoney(refund.shippingAmount)}</TableCell>
              <TableCell>{refund.reason ?? ''}</TableCell>
              <TableCell>
                {refund.actor.type === 'system' ? `${refund.provider === 'stripe' ? 'Stripe' : 'System'}` : (refund.actor.name ?? `User #${refund.actor.id}`)}
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
    </Box>
  )
}

interface LineChoice {
  quantity: string
  restock: boolean
}

function RefundForm({ order }: { order: Order }) {
  const notify = useNotify()
  const refresh = useRefresh()
  const logoutIfAccessDenied = useLogoutIfAccessDenied()
  const formId = useId()
  const [choices, setChoices] = useState<Record<number, LineChoice>>({})
  const [shipping, setShipping] = useState('')
  const [reason, setReason] = useState('')
  const [preview, setPreview] = useState<RefundPreview | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const [confirming, setConfirming] = useState(false)
  // The key of the refund the form describes now: a new one whenever the form changes or a refund is made.
  const [key, setKey] = useState(newKey)

  const changed = () => {
    setPreview(null)
    setError(null)
    setKey(newKey())
  }
  const request = (): RefundRequest => ({
    items: order.items.flatMap((line) => {
      const choice = choices[line.id]
      const quantity = Number(choice?.quantity ?? 0)
      return Number.isInteger(quantity) && quantity > 0 ? [{ orderItemId: line.id, quantity, restock: choice?.restock ?? false }] : []
    }),
    ...(Number(shipping) > 0 ? { shippingAmount: Number(shipping) } : {}),
    ...(reason.trim() ? { reason: reason.trim() } : {}),
  })
  const run = async <T,>(call: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true)
    setError(null)
    try {
      return await call()
    } catch (failure) {
      await logoutIfAccessDenied(failure)
      setError(failure instanceof Error ? failure.message : String(failure))
      return undefined
    } finally {
      setBusy(false)
    }
  }
  const askPreview = async () => {
    const answer = await run(() => previewRefund(order.id, request()))
    if (answer) setPreview(answer)
  }
  const refund = async () => {
    setConfirming(false)
    const made = await run(() => createRefund(order.id, key, request()))
    if (!made) return
    notify(`Refunded ${formatMoney(made.amount)} on order #${order.id}`, { type: 'success' })
    setChoices({})
    setShipping('')
    setReason('')
    changed()
    refresh()
  }

  return (
    <Box component="form" noValidate aria-labelledby={`${formId}-title`} sx={{ mt: 2 }} onSubmit={(event) => (event.preventDefault(), void askPreview())}>
      <Typography id={`${formId}-title`} component="h4" variant="subtitle2" gutterBottom>
        Refund by line
      </Typography>
      <Stack spacing={1.5}>
        {order.items.map((line) => {
          const left = line.quantity - (line.refundedQuantity ?? 0)
          const choice = choices[line.id] ?? { quantity: '', restock: false }
          const set = (next: Partial<LineChoice>) => {
            setChoices({ ...choices, [line.id]: { ...choice, ...next } })
            changed()
          }
          return (
            <Stack key={line.id} direction={{ xs: 'column', sm: 'row' }} spacing={1} sx={{ alignItems: { sm: 'center' } }}>
              <Typography sx={{ flex: 1, minWidth: 0, overflowWrap: 'anywhere' }}>
                {lineName(line)} — {left} of {line.quantity} refundable, {formatMoney(line.total)} for the line
              </Typography>
              <TextField
                label={`Units to refund: ${lineName(line)}`}
                type="number"
                size="small"
                value={choice.quantity}
                disabled={left === 0}
                onChange={(event) => set({ quantity: event.target.value })}
                slotProps={{ htmlInput: { min: 0, max: left, step: 1 } }}
                sx={{ width: { xs: '100%', sm: 220 } }}
              />
              <FormControlLabel
                control={<Checkbox checked={choice.restock} disabled={left === 0} onChange={(event) => set({ restock: event.target.checked })} />}
                label="Put back in stock"
              />
            </Stack>
          )
        })}
        <Stack direction={{ xs: 'column', sm: 'row' }} spacing={1}>
          <TextField
            label={`Shipping to refund (${order.currency})`}
            type="number"
            size="small"
            value={shipping}
            onChange={(event) => {
              setShipping(event.target.value)
              changed()
            }}
            slotProps={{ htmlInput: { min: 0, step: 0.01 } }}
            sx={{ width: { xs: '100%', sm: 220 } }}
          />
          <TextField
            label="Reason (optional)"
            size="small"
            value={reason}
            onChange={(event) => {
              setReason(event.target.value)
              changed()
            }}
            slotProps={{ htmlInput: { maxLength: 500 } }}
            sx={{ flex: 1 }}
          />
        </Stack>
        {error && (
          <Alert severity="error" role="alert">
            {error}
          </Alert>
        )}
        {preview && (
          <Alert severity="info" role="status" aria-label="Refund preview">
            Refund of {formatMoney(preview.amount)} {order.currency} (tax {formatMoney(preview.taxAmount)}
            {preview.shippingAmount > 0 ? `, shipping ${formatMoney(preview.shippingAmount)}` : ''}). Refundable now: {formatMoney(preview.refundable)}.
          </Alert>
        )}
        <Stack direction="row" spacing={1}>
          <Button type="submit" variant="outlined" disabled={busy}>
            Preview refund
          </Button>
          <Button variant="contained" color="error" disabled={busy || !preview} onClick={() => setConfirming(true)}>
            {preview ? `Refund ${formatMoney(preview.amount)}` : 'Refund'}
          </Button>
        </Stack>
      </Stack>
      <Confirm
        isOpen={confirming && preview !== null}
        title={`Refund ${formatMoney(preview?.amount)} ${order.currency}?`}
        content={`Order #${order.id}: ${formatMoney(preview?.amount)} ${order.currency} goes back to the customer${
          order.payment?.provider === 'stripe' ? ' through Stripe' : ' (pay it back by your own means: it is recorded here)'
        }. The order keeps its status.`}
        confirm="Refund"
        cancel="Back"
        onConfirm={() => void refund()}
        onClose={() => setConfirming(false)}
      />
    </Box>
  )
}
