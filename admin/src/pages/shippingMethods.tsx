import {
  AutocompleteArrayInput,
  BooleanInput,
  Button,
  Create,
  Datagrid,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  FunctionField,
  List,
  NumberInput,
  SimpleForm,
  SimpleList,
  TextField,
  TextInput,
  minValue,
  number,
  required,
  useNotify,
  useRecordContext,
  useUpdate,
} from 'react-admin'
import { Chip } from '@mui/material'
import { COUNTRIES, type ShippingMethod } from '../api/shippingMethods'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' })
export const countryName = (code: string) => regionNames.of(code) ?? code
/** Every country the API knows, by name, with its code (what the API takes). */
export const countryChoices = COUNTRIES.map((code) => ({ id: code, name: `${countryName(code)} (${code})` })).sort((a, b) => a.name.localeCompare(b.name))

const money = (value: number) => value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 })
const countriesText = (method: ShippingMethod) => (method.countries.length === 0 ? 'Every country' : method.countries.map(countryName).join(', '))
const freeText = (method: ShippingMethod) => (method.freeOver === null ? 'Never free' : `Free from ${money(method.freeOver)}`)

function ActiveChip({ method }: { method: ShippingMethod }) {
  return (
    <Chip
      size="small"
      variant="outlined"
      label={method.active ? 'Active' : 'Inactive'}
      color={method.active ? 'success' : 'default'}
      sx={{ fontWeight: 600, color: 'text.primary' }}
    />
  )
}

/** Switches a method on or off from the list: an inactive method is not offered at checkout, and orders keep theirs. */
function ToggleActive() {
  const method = useRecordContext<ShippingMethod>()
  const [update, { isPending }] = useUpdate<ShippingMethod>()
  const notify = useNotify()
  if (!method) return null
  const active = !method.active
  return (
    <Button
      label={active ? 'Activate' : 'Deactivate'}
      disabled={isPending}
      onClick={(event) => {
        event.stopPropagation()
        void update(
          'shipping-methods',
          { id: method.id, data: { active }, previousData: method },
          {
            mutationMode: 'pessimistic',
            onSuccess: () => notify(`${method.name} is now ${active ? 'active' : 'inactive'}`, { type: 'success' }),
            onError: (error) => notify(error instanceof Error ? error.message : 'The method could not be changed', { type: 'error' }),
          },
        )
      }}
    />
  )
}

/** Shipping methods: every one, active or not, cheapest first (the API's order). */
export function ShippingMethodList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} empty={false} sort={{ field: 'price', order: 'ASC' }} title="Shipping methods">
      {small ? (
        <SimpleList<ShippingMethod>
          primaryText={(method) => `${method.name} · ${money(method.price)}${method.active ? '' : ' · inactive'}`}
          secondaryText={(method) => `${countriesText(method)} · ${freeText(method)}`}
          linkType="edit"
        />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Shipping methods">
          <TextField source="name" sortable={false} />
          <FunctionField source="price" sortable={false} textAlign="right" render={(method: ShippingMethod) => money(method.price)} />
          <FunctionField label="Countries" render={countriesText} />
          <FunctionField label="Free shipping" render={freeText} />
          <FunctionField label="Status" render={(method: ShippingMethod) => <ActiveChip method={method} />} />
          <ToggleActive />
          <EditButton />
          <DeleteWithConfirmButton
            mutationMode="pessimistic"
            confirmTitle="Delete this shipping method?"
            confirmContent="Orders that used it keep its name and price. To stop offering it for now, deactivate it instead."
          />
        </Datagrid>
      )}
    </List>
  )
}

const amount = [number(), minValue(0, 'must not be less than 0')]

function ShippingMethodFields() {
  return (
    <>
      <TextInput source="name" validate={required()} fullWidth />
      <NumberInput source="price" validate={[required(), ...amount]} step={0.01} helperText="What the customer pays for shipping." />
      <AutocompleteArrayInput
        source="countries"
        choices={countryChoices}
        fullWidth
        helperText="Where it ships. None: every country."
        // The API's order of entries is kept; a country is picked once.
        filterSelectedOptions
      />
      <NumberInput
        source="freeOver"
        label="Free shipping from"
        validate={amount}
        step={0.01}
        helperText="Orders of this subtotal or more ship free. Empty: never free."
      />
      <BooleanInput source="active" helperText="An inactive method is not offered at checkout." />
    </>
  )
}

export function ShippingMethodCreate() {
  return (
    <Create redirect="list" title="New shipping method">
      <SimpleForm defaultValues={{ countries: [], freeOver: null, active: true }}>
        <ShippingMethodFields />
      </SimpleForm>
    </Create>
  )
}

export function ShippingMethodEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect="list" title={<MethodTitle />}>
      <EditForm>
        <ShippingMethodFields />
      </EditForm>
    </Edit>
  )
}

function MethodTitle() {
  const method = useRecordContext<ShippingMethod>()
  return <span>{method ? `Shipping method ${method.name}` : 'Shipping method'}</span>
}
