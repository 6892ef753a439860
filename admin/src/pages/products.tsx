import {
  AutocompleteInput,
  Create,
  CreateButton,
  Datagrid,
  DateField,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  ExportButton,
  FunctionField,
  ImageField,
  ImageInput,
  List,
  NumberField,
  NumberInput,
  ReferenceField,
  ReferenceInput,
  SearchInput,
  SelectInput,
  SimpleList,
  SimpleForm,
  TextInput,
  TopToolbar,
  minValue,
  number,
  required,
  useRecordContext,
} from 'react-admin'
import { Typography } from '@mui/material'
import { PRODUCT_STATUSES, type FullProduct, type Product } from '../api/products'
import { useSmallScreen } from './small'
import { ImagesEditor } from './images'
import { VariantsEditor } from './variants'
import { EditForm } from './editForm'

const statusChoices = PRODUCT_STATUSES.map((status) => ({ id: status, name: status[0]!.toUpperCase() + status.slice(1) }))
const statusName = (status: Product['status']) => statusChoices.find((choice) => choice.id === status)?.name ?? status

const filters = [
  <SearchInput key="q" source="q" alwaysOn placeholder="Search name or description" aria-label="Search products" />,
  <ReferenceInput key="categoryId" source="categoryId" reference="categories" alwaysOn>
    <SelectInput label="Category" optionText="name" emptyText="All categories" />
  </ReferenceInput>,
  <SelectInput key="status" source="status" label="Status" choices={statusChoices} emptyText="All statuses" alwaysOn />,
]

const ListActions = () => (
  <TopToolbar>
    <CreateButton label="New product" />
    <ExportButton />
  </TopToolbar>
)

const money = { style: 'decimal', minimumFractionDigits: 2, maximumFractionDigits: 2 } as const

/** Products: search (name or description), category, status, sort by newest, name or price, 25 a page. */
export function ProductList() {
  const small = useSmallScreen()
  return (
    <List filters={filters} sort={{ field: 'createdAt', order: 'DESC' }} actions={<ListActions />} perPage={25} empty={false}>
      {small ? (
        <SimpleList<Product>
          primaryText={(product) => product.name}
          secondaryText={(product) => `${product.price.toFixed(2)} · ${product.stock} in stock · ${statusName(product.status)}`}
          linkType="edit"
        />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Products">
          <FunctionField
            label="Image"
            sortable={false}
            render={(record: Product) =>
              record.imageUrl ? (
                // An image the host no longer has is hidden rather than shown broken.
                <img
                  src={record.imageUrl}
                  alt=""
                  width={40}
                  height={40}
                  style={{ objectFit: 'cover', borderRadius: 4 }}
                  onError={(event) => {
                    event.currentTarget.style.visibility = 'hidden'
                  }}
                />
              ) : null
            }
          />
          <FunctionField source="name" label="Name" render={(record: Product) => record.name} />
          <ReferenceField source="categoryId" reference="categories" label="Category" sortable={false} emptyText="—" link={false} />
          <NumberField source="price" options={money} />
          <NumberField source="stock" sortable={false} />
          <FunctionField source="status" label="Status" sortable={false} render={(record: Product) => statusName(record.status)} />
          <DateField source="createdAt" label="Created" />
          <EditButton />
          <DeleteWithConfirmButton confirmTitle="Delete this product?" confirmContent="The product and its image are removed; orders keep their lines." />
        </Datagrid>
      )}
    </List>
  )
}

const price = [required(), number(), minValue(0, 'price must not be less than 0')]
const compareAtPrice = [number(), minValue(0, 'compareAtPrice must not be less than 0')]

/** The record's tags as the form's text: comma-separated. */
const tagsText = (value: unknown) => (Array.isArray(value) ? value.join(', ') : typeof value === 'string' ? value : '')

function ProductFields({ creating }: { creating: boolean }) {
  // A product with several variants has a price and a stock per variant (the variants editor): the API refuses them here.
  const record = useRecordContext<FullProduct>()
  const perVariant = !creating && (record?.variants?.length ?? 0) > 1
  return (
    <>
      <TextInput source="name" validate={required()} fullWidth />
      <TextInput source="description" multiline minRows={2} fullWidth />
      <SelectInput source="status" choices={statusChoices} defaultValue={creating ? 'active' : undefined} helperText="Only active products are for sale." />
      {perVariant ? (
        <Typography variant="body2" sx={{ mb: 2 }}>
          Price, stock, SKU and compare-at price are set on each variant, below.
        </Typography>
      ) : (
        <>
          <NumberInput source="price" validate={price} step={0.01} />
          <NumberInput source="stock" step={1} min={0} defaultValue={creating ? 0 : undefined} />
          <TextInput source="sku" label="SKU" helperText="Optional: letters, digits and . _ - /, unique." slotProps={{ htmlInput: { maxLength: 64 } }} />
          <NumberInput
            source="compareAtPrice"
            label="Compare-at price"
            validate={compareAtPrice}
            step={0.01}
            helperText="Optional: the former price, shown struck through."
          />
        </>
      )}
      <ReferenceInput source="categoryId" reference="categories" perPage={1000}>
        <AutocompleteInput label="Category" optionText="path" emptyText="No category" />
      </ReferenceInput>
      <TextInput source="slug" helperText="Made from the name when left empty; an old slug still leads here." fullWidth />
      <TextInput source="tags" format={tagsText} helperText="Comma-separated, e.g. summer, cotton" fullWidth />
      <TextInput
        source="taxClass"
        label="Tax class"
        defaultValue={creating ? 'standard' : undefined}
        validate={required()}
        helperText="A tax class code, such as standard or reduced."
        slotProps={{ htmlInput: { maxLength: 50 } }}
      />
      {creating && (
        <ImageInput
          source="image"
          label="Image (required)"
          accept={{ 'image/*': ['.jpg', '.jpeg', '.png', '.webp', '.gif'] }}
          maxSize={5 * 1024 * 1024}
          inputProps={{ 'aria-label': 'Image file' }}
          validate={required('An image is required')}
          helperText="JPEG, PNG, WebP or GIF, up to 5 MB. The preview shows before anything is uploaded. More images are added on the product's page."
        >
          <ImageField source="src" title="title" />
        </ImageInput>
      )}
    </>
  )
}

export function ProductCreate() {
  return (
    <Create redirect="list" title="New product">
      <SimpleForm>
        <ProductFields creating />
      </SimpleForm>
    </Create>
  )
}

export function ProductEdit() {
  return (
    <Edit mutationMode="pessimistic" title={<ProductTitle />} redirect={false}>
      <EditForm>
        <ProductFields creating={false} />
      </EditForm>
      <ImagesEditor />
      <VariantsEditor />
    </Edit>
  )
}

function ProductTitle() {
  return <span>Edit product</span>
}
