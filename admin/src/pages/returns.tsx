import { useState } from 'react'
import {
  Datagrid,
  DateField,
  FunctionField,
  List,
  SelectInput,
  Show,
  SimpleList,
  TextInput,
  TopToolbar,
  useGetOne,
  useNotify,
  useRecordContext,
  useRedirect,
  useRefresh,
  useUpdate,
} from 'react-admin'
import {
  Box,
  Button,
  Checkbox,
  Chip,
  Dialog,
  DialogActions,
  DialogContent,
  DialogTitle,
  FormControlLabel,
  Link,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material'
import { errorCode } from '../api/answers'
import type { Order } from '../api/orders'
import { useCan } from '../api/permissions'
import { RETURN_STATUSES, type Return, type ReturnStatus, type Withdrawal } from '../api/returns'
import { useSmallScreen } from './small'

const capital = (text: string) => text[0]!.toUpperCase() + text.slice(1)
const statusChoices = RETURN_STATUSES.map((status) => ({ id: status, name: capital(status) }))
const sourceLabels: Record<Return['source'], string> = { customer: 'Customer', admin: 'Staff', withdrawal: 'Withdrawal' }

function ReturnStatusChip({ status }: { status: ReturnStatus }) {
  const colors: Record<ReturnStatus, 'warning' | 'info' | 'default' | 'success'> = {
    requested: 'warning',
    approved: 'info',
    rejected: 'default',
    received: 'success',
  }
  return <Chip size="small" label={status} color={colors[status]} variant="outlined" sx={{ fontWeight: 600, color: 'text.primary' }} />
}

const orderLink = (orderId: number) => <Link href={`#/orders/${orderId}/show`}>Order #{orderId}</Link>
const units = (items: ReadonlyArray<{ quantity: number }>) => items.reduce((sum, item) => sum + item.quantity, 0)

const returnFilters = [
  <SelectInput key="status" source="status" choices={statusChoices} alwaysOn emptyText="All statuses" label="Status" />,
  <TextInput key="orderId" source="orderId" label="Order number" alwaysOn resettable={false} />,
]

/** Returns, newest first, by status and order. */
export function ReturnList() {
  const small = useSmallScreen()
  return (
    <List filters={returnFilters} perPage={25} exporter={false} empty={false} title="Returns">
      {small ? (
        <SimpleList<Return>
          primaryText={(ret) => `Return #${ret.id} · ${ret.status}`}
          secondaryText={(ret) => `Order #${ret.orderId} · ${units(ret.items)} units · ${sourceLabels[ret.source]}`}
          tertiaryText={(ret) => new Date(ret.createdAt).toLocaleDateString()}
          linkType="show"
        />
      ) : (
        <Datagrid rowClick="show" bulkActionButtons={false} aria-label="Returns">
          <FunctionField source="id" label="Return" sortable={false} render={(ret: Return) => `#${ret.id}`} />
          <FunctionField label="Order" sortable={false} render={(ret: Return) => `#${ret.orderId}`} />
          <FunctionField label="Units" sortable={false} render={(ret: Return) => units(ret.items)} />
          <FunctionField label="From" sortable={false} render={(ret: Return) => sourceLabels[ret.source]} />
          <FunctionField source="status" sortable={false} render={(ret: Return) => <ReturnStatusChip status={ret.status} />} />
          <DateField source="createdAt" label="Asked" showTime sortable={false} />
        </Datagrid>
      )}
    </List>
  )
}

/** What staff may do with the return now: approve or reject a requested one, receive an approved one. */
function ReturnMoves() {
  const ret = useRecordContext<Return>()
  const [update, { isPending }] = useUpdate()
  const notify = useNotify()
  const refresh = useRefresh()
  const [rejecting, setRejecting] = useState(false)
  const [reason, setReason] = useState('')
  const [receiving, setReceiving] = useState(false)
  const [refund, setRefund] = useState(true)
  const [restock, setRestock] = useState(true)
  // One key per receipt dialog: a second click on a slow answer refunds once.
  const [receiptKey, setReceiptKey] = useState('')
  const can = useCan()
  // Moving returns is returns:write; a receipt that refunds also refunds:write (without it, the receipt does not refund).
  const canRefund = can('refunds:write')
  if (!ret || !can('returns:write')) return null
  const move = (data: Record<string, unknown>, done: string) =>
    update(
      'returns',
      { id: ret.id, data, previousData: ret },
      {
        mutationMode: 'pessimistic',
        onSuccess: () => {
          notify(done, { type: 'success' })
          refresh()
        },
        onError: (error) => {
          notify(error instanceof Error ? error.message : 'The return could not be changed', { type: 'error' })
          // Moved meanwhile by someone else: read it again, so the buttons offer today's moves.
          if (errorCode(error) === 'return_transition_not_allowed') refresh()
        },
      },
    )
  return (
    <TopToolbar>
      {ret.status === 'requested' && (
        <>
          <Button variant="contained" disabled={isPending} onClick={() => void move({ action: 'approve' }, `Return #${ret.id} approved`)}>
            Approve
          </Button>
          <Button variant="outlined" color="error" disabled={isPending} onClick={() => setRejecting(true)}>
            Reject
          </Button>
        </>
      )}
      {ret.status === 'approved' && (
        <Button
          variant="contained"
          disabled={isPending}
          onClick={() => {
            setReceiptKey(crypto.randomUUID())
            setReceiving(true)
          }}
        >
          Mark as received
        </Button>
      )}
      <Dialog open={rejecting} onClose={() => setRejecting(false)} aria-labelledby="reject-title">
        <DialogTitle id="reject-title">Reject return #{ret.id}?</DialogTitle>
        <DialogContent>
          <Typography gutterBottom>The customer is told by e-mail, with the reason.</Typography>
          <TextField
            label="Reason"
            value={reason}
            onChange={(event) => setReason(event.target.value)}
            required
            fullWidth
            multiline
            minRows={2}
            margin="dense"
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={() => setRejecting(false)}>Keep it</Button>
          <Button
            color="error"
            variant="contained"
            disabled={reason.trim() === ''}
            onClick={() => {
              setRejecting(false)
              void move({ action: 'reject', reason: reason.trim() }, `Return #${ret.id} rejected`)
            }}
          >
            Reject return
          </Button>
        </DialogActions>
      </Dialog>
      <Dialog open={receiving} onClose={() => setReceiving(false)} aria-labelledby="receive-title">
        <DialogTitle id="receive-title">Receive return #{ret.id}?</DialogTitle>
        <DialogContent>
          <Typography gutterBottom>Every unit of the return arrived: {units(ret.items)} in all.</Typography>
          <FormControlLabel
            control={<Checkbox checked={restock} onChange={(event) => setRestock(event.target.checked)} />}
            label="Put the units back in stock"
          />
          {canRefund && (
            <FormControlLabel
              control={<Checkbox checked={refund} onChange={(event) => setRefund(event.target.checked)} />}
              label="Refund the received units to the customer"
            />
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={() => setReceiving(false)}>Not yet</Button>
          <Button
            variant="contained"
            onClick={() => {
              setReceiving(false)
              void move({ action: 'receive', refund: refund && canRefund, restock, idempotencyKey: receiptKey }, `Return #${ret.id} received`)
            }}
          >
            Receive
          </Button>
        </DialogActions>
      </Dialog>
    </TopToolbar>
  )
}

/** A return's lines, named from its order's. */
function ReturnLines({ ret }: { ret: Return }) {
  const { data: order } = useGetOne<Order>('orders', { id: ret.orderId })
  const line = (orderItemId: number) => order?.items.find((item) => item.id === orderItemId)
  return (
    <Box component="section" tabIndex={0} aria-label="Returned lines" sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
      <Table size="small" aria-label="Returned lines">
        <TableHead>
          <TableRow>
            <TableCell>Product</TableCell>
            <TableCell align="right">Units</TableCell>
            <TableCell align="right">Received</TableCell>
            <TableCell>Reason</TableCell>
          </TableRow>
        </TableHead>
        <TableBody>
          {ret.items.map((item) => (
            <TableRow key={item.orderItemId}>
              <TableCell>
                {line(item.orderItemId)?.name ?? `Line #${item.orderItemId}`}
                {line(item.orderItemId)?.variantTitle && ` (${line(item.orderItemId)?.variantTitle})`}
              </TableCell>
              <TableCell align="right">{item.quantity}</TableCell>
              <TableCell align="right">{item.receivedQuantity ?? '—'}</TableCell>
              <TableCell>{item.reason ?? ''}</TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
    </Box>
  )
}

function ReturnDetail() {
  const ret = useRecordContext<Return>()
  if (!ret) return null
  return (
    <Stack spacing={2} sx={{ p: 2 }}>
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={2} sx={{ alignItems: { sm: 'center' } }}>
        <Typography component="h2" variant="h6">
          Return #{ret.id}
        </Typography>
        <ReturnStatusChip status={ret.status} />
        <Typography variant="body2">Asked {new Date(ret.createdAt).toLocaleString()}</Typography>
      </Stack>
      <Typography>
        {orderLink(ret.orderId)} · from {sourceLabels[ret.source].toLowerCase()}
        {ret.withdrawalId !== null && (
          <>
            {' '}
            (<Link href={`#/withdrawals/${ret.withdrawalId}/show`}>withdrawal #{ret.withdrawalId}</Link>)
          </>
        )}
      </Typography>
      {ret.reason && <Typography>Customer’s reason: {ret.reason}</Typography>}
      {ret.rejectionReason && <Typography>Rejected: {ret.rejectionReason}</Typography>}
      {ret.refundId !== null && <Typography>Refunded (refund #{ret.refundId}).</Typography>}
      <ReturnLines ret={ret} />
    </Stack>
  )
}

function ReturnTitle() {
  const ret = useRecordContext<Return>()
  return <span>{ret ? `Return #${ret.id}` : 'Return'}</span>
}

export function ReturnShow() {
  return (
    <Show actions={<ReturnMoves />} title={<ReturnTitle />}>
      <ReturnDetail />
    </Show>
  )
}

// ---- withdrawals ----

const convertedChoices = [
  { id: 'false', name: 'No return yet' },
  { id: 'true', name: 'Return made' },
]

const withdrawalFilters = [
  <SelectInput key="converted" source="converted" choices={convertedChoices} alwaysOn emptyText="All" label="Return" />,
  <TextInput key="orderId" source="orderId" label="Order number" alwaysOn resettable={false} />,
]

/** Withdrawals, newest first, by order and by whether a return was made of them. */
export function WithdrawalList() {
  const small = useSmallScreen()
  return (
    <List filters={withdrawalFilters} perPage={25} exporter={false} empty={false} title="Withdrawals">
      {small ? (
        <SimpleList<Withdrawal>
          primaryText={(w) => `Withdrawal #${w.id} · order #${w.orderId}`}
          secondaryText={(w) => `${w.name} <${w.email}>`}
          tertiaryText={(w) => new Date(w.receivedAt).toLocaleDateString()}
          linkType="show"
        />
      ) : (
        <Datagrid rowClick="show" bulkActionButtons={false} aria-label="Withdrawals">
          <FunctionField source="id" label="Withdrawal" sortable={false} render={(w: Withdrawal) => `#${w.id}`} />
          <FunctionField label="Order" sortable={false} render={(w: Withdrawal) => `#${w.orderId}`} />
          <FunctionField label="Customer" sortable={false} render={(w: Withdrawal) => `${w.name} <${w.email}>`} />
          <FunctionField label="Units" sortable={false} render={(w: Withdrawal) => units(w.items)} />
          <FunctionField label="Return" sortable={false} render={(w: Withdrawal) => (w.returnId === null ? 'Not yet' : `#${w.returnId}`)} />
          <DateField source="receivedAt" label="Received" showTime sortable={false} />
        </Datagrid>
      )}
    </List>
  )
}

/** "Make a return" of the withdrawal's shipped units, while it has none; then a link to it. */
function WithdrawalMoves() {
  const withdrawal = useRecordContext<Withdrawal>()
  const [update, { isPending }] = useUpdate()
  const notify = useNotify()
  const redirect = useRedirect()
  const refresh = useRefresh()
  const can = useCan()
  if (!withdrawal) return null
  if (withdrawal.returnId !== null) {
    return (
      <TopToolbar>
        <Button href={`#/returns/${withdrawal.returnId}/show`}>Open return #{withdrawal.returnId}</Button>
      </TopToolbar>
    )
  }
  const makeReturn = () =>
    update(
      'withdrawals',
      { id: withdrawal.id, data: { action: 'return' }, previousData: withdrawal },
      {
        mutationMode: 'pessimistic',
        onSuccess: (updated: Withdrawal) => {
          notify(`Return #${String(updated.returnId)} made`, { type: 'success' })
          if (updated.returnId !== null) redirect('show', 'returns', updated.returnId)
        },
        onError: (error) => {
          notify(error instanceof Error ? error.message : 'The return could not be made', { type: 'error' })
          if (errorCode(error) === 'withdrawal_has_return') refresh()
        },
      },
    )
  if (!can('returns:write')) return null
  return (
    <TopToolbar>
      <Button variant="contained" disabled={isPending} onClick={() => void makeReturn()}>
        Make a return
      </Button>
    </TopToolbar>
  )
}

function WithdrawalDetail() {
  const withdrawal = useRecordContext<Withdrawal>()
  if (!withdrawal) return null
  return (
    <Stack spacing={2} sx={{ p: 2 }}>
      <Typography component="h2" variant="h6">
        Withdrawal #{withdrawal.id}
      </Typography>
      <Typography>
        {orderLink(withdrawal.orderId)} · {withdrawal.name} &lt;{withdrawal.email}&gt;
      </Typography>
      <Typography>
        Received {new Date(withdrawal.receivedAt).toLocaleString()} ({withdrawal.receivedAt}) · deadline then:{' '}
        {withdrawal.deadline ?? 'not yet running (the order was not all delivered)'}
      </Typography>
      <Box component="blockquote" sx={{ m: 0, pl: 2, borderLeft: 4, borderColor: 'divider' }}>
        <Typography>{withdrawal.statement}</Typography>
      </Box>
      <Box component="section" tabIndex={0} aria-label="Withdrawn lines" sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
        <Table size="small" aria-label="Withdrawn lines">
          <TableHead>
            <TableRow>
              <TableCell>Product</TableCell>
              <TableCell align="right">Units</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {withdrawal.items.map((item) => (
              <TableRow key={item.orderItemId}>
                <TableCell>
                  {item.name ?? `Line #${item.orderItemId}`}
                  {item.variantTitle && ` (${item.variantTitle})`}
                </TableCell>
                <TableCell align="right">{item.quantity}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </Box>
      <Typography variant="body2">
        Sent from {withdrawal.ip ?? 'an unknown address'} · {withdrawal.userAgent ?? 'no user agent'}
      </Typography>
    </Stack>
  )
}

function WithdrawalTitle() {
  const withdrawal = useRecordContext<Withdrawal>()
  return <span>{withdrawal ? `Withdrawal #${withdrawal.id}` : 'Withdrawal'}</span>
}

export function WithdrawalShow() {
  return (
    <Show actions={<WithdrawalMoves />} title={<WithdrawalTitle />}>
      <WithdrawalDetail />
    </Show>
  )
}
