import {
  AutocompleteInput,
  Create,
  Datagrid,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  FunctionField,
  Labeled,
  List,
  NumberInput,
  SelectInput,
  SimpleForm,
  SimpleList,
  TextField,
  TextInput,
  maxValue,
  minValue,
  number,
  required,
  useGetList,
  useRecordContext,
  type SelectInputProps,
} from 'react-admin'
import { Box, Typography } from '@mui/material'
import type { TaxClass, TaxRate } from '../api/taxes'
import { countryChoices, countryName } from './shippingMethods'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

/** The tax classes as choices by their code (what rates, products and shipping methods name), read once. */
function TaxClassInput(props: Omit<SelectInputProps, 'choices'>) {
  const { data = [], isPending } = useGetList<TaxClass>('tax-classes', { pagination: { page: 1, perPage: 1000 }, sort: { field: 'id', order: 'ASC' } })
  const choices = data.map((taxClass) => ({ id: taxClass.code, name: `${taxClass.name} (${taxClass.code})` }))
  return <SelectInput label="Tax class" {...props} choices={choices} isPending={isPending} />
}

const rateFilters = [
  <AutocompleteInput key="country" source="country" label="Country" choices={countryChoices} alwaysOn emptyText="Every country" />,
  <TaxClassInput key="taxClass" source="taxClass" alwaysOn emptyText="Every class" />,
]

const percent = (rate: TaxRate) => `${rate.rate.toLocaleString()}%`
const regionText = (rate: TaxRate) => rate.region ?? 'Whole country'

/** Tax rates: by country, class and region (the API's order), filtered by country and class. */
export function TaxRateList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} empty={false} filters={rateFilters} title="Tax rates">
      {small ? (
        <SimpleList<TaxRate>
          primaryText={(rate) => `${countryName(rate.country)} · ${rate.taxClass} · ${percent(rate)}`}
          secondaryText={(rate) => `${regionText(rate)} · ${rate.name}`}
          linkType="edit"
        />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Tax rates">
          <FunctionField label="Country" render={(rate: TaxRate) => `${countryName(rate.country)} (${rate.country})`} />
          <FunctionField label="Region" render={regionText} />
          <TextField source="taxClass" label="Tax class" sortable={false} />
          <FunctionField label="Rate" textAlign="right" render={percent} />
          <TextField source="name" sortable={false} />
          <EditButton />
          <DeleteWithConfirmButton
            mutationMode="pessimistic"
            confirmTitle="Delete this tax rate?"
            confirmContent="Orders keep the taxes they were placed with."
          />
        </Datagrid>
      )}
    </List>
  )
}

function TaxRateFields() {
  return (
    <>
      <AutocompleteInput source="country" label="Country" choices={countryChoices} validate={required()} />
      <TextInput source="region" helperText="A region of the country (Canarias). Empty: the whole country." />
      <TaxClassInput source="taxClass" validate={required()} />
      <NumberInput
        source="rate"
        label="Rate (%)"
        validate={[required(), number(), minValue(0, 'must not be less than 0'), maxValue(100, 'must not be greater than 100')]}
        step={0.01}
        helperText="A percentage: 21 is 21%."
      />
      <TextInput source="name" helperText="Shown on tax lines. Empty: IVA and the rate (IVA 21%)." />
    </>
  )
}

export function TaxRateCreate() {
  return (
    <Create redirect="list" title="New tax rate">
      <SimpleForm defaultValues={{ taxClass: 'standard' }}>
        <TaxRateFields />
      </SimpleForm>
    </Create>
  )
}

export function TaxRateEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect="list" title="Tax rate">
      <EditForm>
        <TaxRateFields />
      </EditForm>
    </Edit>
  )
}

/** Tax classes, in the order they were made (the API's). */
export function TaxClassList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} empty={false} title="Tax classes">
      {small ? (
        <SimpleList<TaxClass> primaryText={(taxClass) => taxClass.name} secondaryText={(taxClass) => taxClass.code} linkType="edit" />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Tax classes">
          <TextField source="code" sortable={false} />
          <TextField source="name" sortable={false} />
          <EditButton />
          <DeleteWithConfirmButton
            mutationMode="pessimistic"
            confirmTitle="Delete this tax class?"
            confirmContent="A class that a rate, a product, a variant or a shipping method names stays, as does standard."
          />
        </Datagrid>
      )}
    </List>
  )
}

export function TaxClassCreate() {
  return (
    <Create redirect="list" title="New tax class">
      <SimpleForm>
        <TextInput source="code" validate={required()} helperText="1 to 30 of a-z, 0-9 and _. It never changes." />
        <TextInput source="name" validate={required()} />
      </SimpleForm>
    </Create>
  )
}

function ClassCode() {
  const taxClass = useRecordContext<TaxClass>()
  if (!taxClass) return null
  return (
    <Labeled label="Code">
      <Box>
        <Typography sx={{ fontWeight: 600 }}>{taxClass.code}</Typography>
        <Typography variant="body2" color="text.secondary">
          A class keeps its code: rates, products and shipping methods name it.
        </Typography>
      </Box>
    </Labeled>
  )
}

export function TaxClassEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect="list" title="Tax class">
      <EditForm>
        <ClassCode />
        <TextInput source="name" validate={required()} />
      </EditForm>
    </Edit>
  )
}
