import { useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import {
  AutocompleteArrayInput,
  BooleanInput,
  Button,
  Create,
  Datagrid,
  DateTimeInput,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  FunctionField,
  Labeled,
  Link,
  List,
  NumberInput,
  ReferenceArrayInput,
  SaveButton,
  SearchInput,
  SelectInput,
  SimpleForm,
  SimpleList,
  TextField,
  TextInput,
  Toolbar,
  maxValue,
  minValue,
  number,
  required,
  useNotify,
  useRecordContext,
  useRedirect,
  useUpdate,
} from 'react-admin'
import { useWatch } from 'react-hook-form'
import { Alert, Box, Card, CardContent, Chip, Stack, Table, TableBody, TableCell, TableHead, TableRow, Typography } from '@mui/material'
import { errorCode } from '../api/answers'
import { api } from '../api/client'
import { DISCOUNT_TYPES, listRedemptions, type DiscountCode, type DiscountType } from '../api/discountCodes'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

const typeNames: Record<DiscountType, string> = { percent: 'Percentage off', fixed: 'Amount off', free_shipping: 'Free shipping' }
const typeChoices = DISCOUNT_TYPES.map((type) => ({ id: type, name: typeNames[type] }))

const money = (value: number) => value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 })
const when = (instant: string | null) => (instant === null ? '—' : new Date(instant).toLocaleString())

/** What the code takes off: `12.5%`, `5.00`, or free shipping. */
export function valueText(code: DiscountCode): string {
  if (code.type === 'free_shipping' || code.value === null) return 'Free shipping'
  return code.type === 'percent' ? `${code.value.toLocaleString()}%` : money(code.value)
}
/** Its uses so far and its limit: `3 of 100`, or `3 (no limit)`. */
const usesText = (code: DiscountCode) => (code.usageLimit === null ? `${code.usageCount} (no limit)` : `${code.usageCount} of ${code.usageLimit}`)
/** When it can be used: `From … until …`, or `Always`. */
function datesText(code: DiscountCode): string {
  const parts = [...(code.startsAt === null ? [] : [`from ${when(code.startsAt)}`]), ...(code.endsAt === null ? [] : [`until ${when(code.endsAt)}`])]
  return parts.length === 0 ? 'Always' : parts.join(' ')
}

const filters = [
  <SearchInput key="q" source="q" alwaysOn placeholder="Search codes" aria-label="Search codes" />,
  <SelectInput
    key="active"
    source="active"
    label="Status"
    choices={[
      { id: 'true', name: 'Active' },
      { id: 'false', name: 'Inactive' },
    ]}
    emptyText="Active or not"
    alwaysOn
  />,
]

function ActiveChip({ code }: { code: DiscountCode }) {
  return (
    <Chip
      size="small"
      variant="outlined"
      label={code.active ? 'Active' : 'Inactive'}
      color={code.active ? 'success' : 'default'}
      sx={{ fontWeight: 600, color: 'text.primary' }}
    />
  )
}

/** Switches a code on or off from the list: an inactive code is refused at checkout, and orders keep their discount. */
function ToggleActive() {
  const code = useRecordContext<DiscountCode>()
  const [update, { isPending }] = useUpdate<DiscountCode>()
  const notify = useNotify()
  if (!code) return null
  const active = !code.active
  return (
    <Button
      label={active ? 'Activate' : 'Deactivate'}
      aria-label={`${active ? 'Activate' : 'Deactivate'} ${code.code}`}
      disabled={isPending}
      onClick={(event) => {
        event.stopPropagation()
        void update(
          'discount-codes',
          { id: code.id, data: { active }, previousData: code },
          {
            mutationMode: 'pessimistic',
            onSuccess: () => notify(`${code.code} is now ${active ? 'active' : 'inactive'}`, { type: 'success' }),
            onError: (error) => notify(error instanceof Error ? error.message : 'The code could not be changed', { type: 'error' }),
          },
        )
      }}
    />
  )
}

/**
 * Delete after confirmation. The API keeps a code that orders used (`El código tiene usos: desactívalo en su
 * lugar`): the notice says so in its words and suggests deactivating it, which stops it being used.
 */
function DeleteCode({ afterDelete }: { afterDelete?: 'list' }) {
  const code = useRecordContext<DiscountCode>()
  const notify = useNotify()
  const redirect = useRedirect()
  if (!code) return null
  return (
    <DeleteWithConfirmButton
      mutationMode="pessimistic"
      redirect={afterDelete ?? false}
      confirmTitle={`Delete the code ${code.code}?`}
      confirmContent={
        code.usageCount > 0
          ? 'Orders have used it, so the shop keeps it: deactivate it instead.'
          : 'No order has used it. To stop it being used for now, deactivate it instead.'
      }
      mutationOptions={{
        onSuccess: () => {
          notify(`Discount code ${code.code} deleted`, { type: 'info' })
          if (afterDelete) redirect('list', 'discount-codes')
        },
        onError: (error: unknown) => {
          const message = error instanceof Error ? error.message : 'The code could not be deleted'
          const suggestion =
            errorCode(error) === 'discount_code_in_use'
              ? ` It has been used on orders, which keep their discount: deactivate it instead (switch off "Active" and save, or "Deactivate" in the list).`
              : ''
          notify(`${message}.${suggestion}`, { type: 'error', autoHideDuration: 15000, multiLine: true })
        },
      }}
    />
  )
}

/** Discount codes, newest first: search by part of the code, active or not, 25 a page (the API pages them). */
export function DiscountCodeList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} empty={false} filters={filters} title="Discount codes" sort={{ field: 'createdAt', order: 'DESC' }}>
      {small ? (
        <SimpleList<DiscountCode>
          primaryText={(code) => `${code.code} · ${valueText(code)}${code.active ? '' : ' · inactive'}`}
          secondaryText={(code) => `Used ${usesText(code)} · ${datesText(code)}`}
          linkType="edit"
        />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Discount codes">
          <TextField source="code" sortable={false} />
          <FunctionField label="Type" render={(code: DiscountCode) => typeNames[code.type]} />
          <FunctionField label="Value" textAlign="right" render={valueText} />
          <FunctionField label="Used" render={usesText} />
          <FunctionField label="Status" render={(code: DiscountCode) => <ActiveChip code={code} />} />
          <FunctionField label="Starts" render={(code: DiscountCode) => when(code.startsAt)} />
          <FunctionField label="Ends" render={(code: DiscountCode) => when(code.endsAt)} />
          <ToggleActive />
          <EditButton />
          <DeleteCode />
        </Datagrid>
      )}
    </List>
  )
}

const amount = [number(), minValue(0, 'must not be less than 0')]
const limit = [number(), minValue(1, 'must not be less than 1')]

/** The value, as the type wants it: a percentage, an amount, or none for free shipping. */
function ValueInput() {
  const type = useWatch<{ type?: DiscountType }>({ name: 'type' })
  if (type === 'free_shipping') {
    return (
      <Typography variant="body2" sx={{ my: 1 }}>
        Free shipping takes no value: the order&apos;s shipping is free.
      </Typography>
    )
  }
  if (type === 'fixed') {
    return (
      <NumberInput key="fixed" source="value" label="Amount off" validate={[required(), ...amount]} step={0.01} helperText="Taken off the eligible lines." />
    )
  }
  return (
    <NumberInput
      key="percent"
      source="value"
      label="Percentage off"
      validate={[required(), number(), minValue(0.01, 'must not be less than 0.01'), maxValue(100, 'must not be greater than 100')]}
      step={0.01}
      helperText="0.01 to 100: 12.5 takes 12.5% off the eligible lines."
    />
  )
}

function DiscountCodeFields({ editing }: { editing: boolean }) {
  return (
    <>
      {editing ? (
        // A code keeps its text for good: shown, not offered as an input.
        <Labeled label="Code">
          <Box>
            <TextField source="code" variant="body1" sx={{ fontWeight: 600 }} />
            <Typography variant="body2" color="text.secondary">
              A code cannot be changed: deactivate it and create another.
            </Typography>
          </Box>
        </Labeled>
      ) : (
        <TextInput source="code" validate={required()} helperText="3 to 50 letters, digits, hyphens and underscores; unique ignoring case." />
      )}
      <SelectInput source="type" choices={typeChoices} validate={required()} />
      <ValueInput />
      <NumberInput source="minSubtotal" label="Minimum subtotal" validate={amount} step={0.01} helperText="Of the eligible lines. Empty: none." />
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={{ xs: 0, sm: 2 }}>
        <DateTimeInput source="startsAt" label="Starts" helperText="Your local time. Empty: from now." />
        <DateTimeInput source="endsAt" label="Ends" helperText="Empty: never ends." />
      </Stack>
      <Stack direction={{ xs: 'column', sm: 'row' }} spacing={{ xs: 0, sm: 2 }}>
        <NumberInput source="usageLimit" label="Usage limit" validate={limit} step={1} helperText="Orders in all. Empty: no limit." />
        <NumberInput source="perCustomerLimit" label="Per-customer limit" validate={limit} step={1} helperText="Orders per customer. Empty: no limit." />
      </Stack>
      <ReferenceArrayInput source="productIds" reference="products" perPage={25}>
        <AutocompleteArrayInput
          label="Products"
          optionText="name"
          filterToQuery={(q: string) => ({ q })}
          fullWidth
          filterSelectedOptions
          helperText="The products it applies to. No products and no categories: every product."
        />
      </ReferenceArrayInput>
      <ReferenceArrayInput source="categoryIds" reference="categories" perPage={1000} sort={{ field: 'name', order: 'ASC' }}>
        <AutocompleteArrayInput label="Categories" optionText="path" fullWidth filterSelectedOptions helperText="With their subcategories." />
      </ReferenceArrayInput>
      <BooleanInput source="active" helperText="An inactive code is refused at checkout; orders keep their discount." />
    </>
  )
}

export function DiscountCodeCreate() {
  return (
    <Create redirect="edit" title="New discount code">
      <SimpleForm defaultValues={{ type: 'percent', productIds: [], categoryIds: [], active: true }}>
        <DiscountCodeFields editing={false} />
      </SimpleForm>
    </Create>
  )
}

function EditToolbar() {
  return (
    <Toolbar sx={{ justifyContent: 'space-between' }}>
      <SaveButton />
      <DeleteCode afterDelete="list" />
    </Toolbar>
  )
}

const PAGE = 10

/** The orders that used the code, newest first, 10 a page. */
function Redemptions() {
  const code = useRecordContext<DiscountCode>()
  const [page, setPage] = useState(0)
  const id = code?.id
  // Read again when the code's count changes (a new use, or one given back).
  const { data, error, isPending } = useQuery({
    queryKey: ['discount-redemptions', id, page, code?.usageCount],
    queryFn: () => listRedemptions(api, id!, { limit: PAGE, offset: page * PAGE }),
    enabled: id !== undefined,
  })
  if (!code) return null
  const total = data?.total ?? 0
  const first = page * PAGE + 1
  const last = Math.min(total, (page + 1) * PAGE)
  return (
    <Card sx={{ mt: 2 }} component="section" aria-labelledby="redemptions-heading">
      <CardContent>
        <Typography component="h2" variant="h6" gutterBottom id="redemptions-heading">
          Redemptions{data ? ` (${data.total})` : ''}
        </Typography>
        {isPending && <Typography>Loading the redemptions…</Typography>}
        {error && <Alert severity="error">The redemptions could not be loaded: {error.message}</Alert>}
        {data && data.data.length === 0 && <Typography>No order has used this code yet.</Typography>}
        {data && data.data.length > 0 && (
          <>
            {/* Scrolls sideways on its own on a phone rather than widening the page. */}
            <Box sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
              <Table size="small" aria-label="Redemptions">
                <TableHead>
                  <TableRow>
                    <TableCell>Order</TableCell>
                    <TableCell>Customer</TableCell>
                    <TableCell align="right">Discount</TableCell>
                    <TableCell>Date</TableCell>
                  </TableRow>
                </TableHead>
                <TableBody>
                  {data.data.map((redemption) => (
                    <TableRow key={redemption.orderId}>
                      <TableCell>
                        <Link to={`/orders/${redemption.orderId}/show`}>Order #{redemption.orderId}</Link>
                      </TableCell>
                      <TableCell>{redemption.email}</TableCell>
                      <TableCell align="right">{money(redemption.amount)}</TableCell>
                      <TableCell>{new Date(redemption.createdAt).toLocaleString()}</TableCell>
                    </TableRow>
                  ))}
                </TableBody>
              </Table>
            </Box>
            <Stack direction="row" spacing={1} sx={{ mt: 1, alignItems: 'center', justifyContent: 'flex-end' }}>
              <Typography variant="body2" aria-live="polite">
                {first}–{last} of {total}
              </Typography>
              <Button label="Previous" aria-label="Previous redemptions" disabled={page === 0} onClick={() => setPage(page - 1)} />
              <Button label="Next" aria-label="Next redemptions" disabled={last >= total} onClick={() => setPage(page + 1)} />
            </Stack>
          </>
        )}
      </CardContent>
    </Card>
  )
}

export function DiscountCodeEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect={false} title={<CodeTitle />}>
      <EditForm toolbar={<EditToolbar />}>
        <DiscountCodeFields editing />
      </EditForm>
      <Redemptions />
    </Edit>
  )
}

function CodeTitle() {
  const code = useRecordContext<DiscountCode>()
  return <span>{code ? `Discount code ${code.code}` : 'Discount code'}</span>
}
