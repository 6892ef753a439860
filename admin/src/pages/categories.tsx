import {
  Create,
  Datagrid,
  DateField,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  List,
  NumberInput,
  ReferenceField,
  ReferenceInput,
  SearchInput,
  SelectInput,
  SimpleForm,
  SimpleList,
  TextField,
  TextInput,
  required,
} from 'react-admin'
import { useSmallScreen } from './small'

const filters = [<SearchInput key="q" source="q" alwaysOn placeholder="Search categories" aria-label="Search categories" />]

/** Categories: every one at once (sorted by name) with its slug and parent, edit on a click, delete with confirmation. */
export function CategoryList() {
  const small = useSmallScreen()
  return (
    <List filters={filters} sort={{ field: 'name', order: 'ASC' }} perPage={25} empty={false} exporter={false}>
      {small ? (
        <SimpleList<{ id: number; name: string; description: string }>
          primaryText={(category) => category.name}
          secondaryText={(category) => category.description}
          linkType="edit"
        />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Categories">
          <TextField source="name" />
          <TextField source="slug" sortable={false} />
          <ReferenceField source="parentId" reference="categories" label="Parent" sortable={false} emptyText="—">
            <TextField source="name" />
          </ReferenceField>
          <TextField source="description" sortable={false} />
          <DateField source="createdAt" label="Created" />
          <EditButton label="Rename" />
          <DeleteWithConfirmButton
            mutationMode="pessimistic"
            confirmTitle="Delete this category?"
            confirmContent="A category with subcategories, or still used by products, cannot be deleted."
          />
        </Datagrid>
      )}
    </List>
  )
}

function CategoryFields() {
  return (
    <>
      <TextInput source="name" validate={required()} fullWidth />
      <TextInput source="slug" helperText="Made from the name when left empty; an old slug still leads here." fullWidth />
      <ReferenceInput source="parentId" reference="categories" perPage={1000} sort={{ field: 'name', order: 'ASC' }}>
        <SelectInput label="Parent" optionText="name" emptyText="None (a root category)" fullWidth />
      </ReferenceInput>
      <NumberInput source="position" min={0} step={1} />
      <TextInput source="description" multiline fullWidth />
    </>
  )
}

export function CategoryCreate() {
  return (
    <Create redirect="list" title="New category">
      <SimpleForm>
        <CategoryFields />
      </SimpleForm>
    </Create>
  )
}

export function CategoryEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect="list" title="Rename category">
      <SimpleForm>
        <CategoryFields />
      </SimpleForm>
    </Edit>
  )
}
