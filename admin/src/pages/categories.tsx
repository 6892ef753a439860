import { useQuery } from '@tanstack/react-query'
import {
  Create,
  CreateButton,
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
  Link,
  TextField,
  TextInput,
  Title,
  TopToolbar,
  required,
  useLogoutIfAccessDenied,
} from 'react-admin'
import { Alert, Box, Button, Card, CardContent, LinearProgress, Typography } from '@mui/material'
import AccountTreeIcon from '@mui/icons-material/AccountTree'
import { api } from '../api/client'
import { categoryTree, type CategoryNode } from '../api/categories'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

const filters = [<SearchInput key="q" source="q" alwaysOn placeholder="Search categories" aria-label="Search categories" />]

const ListActions = () => (
  <TopToolbar>
    <Button component={Link} to="/category-tree" startIcon={<AccountTreeIcon />} size="small">
      Tree
    </Button>
    <CreateButton />
  </TopToolbar>
)

/** Categories: every one at once (sorted by name) with its slug and parent, edit on a click, delete with confirmation. */
export function CategoryList() {
  const small = useSmallScreen()
  return (
    <List filters={filters} sort={{ field: 'name', order: 'ASC' }} perPage={25} empty={false} exporter={false} actions={<ListActions />}>
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
        <SelectInput label="Parent" optionText="path" emptyText="None (a root category)" fullWidth />
      </ReferenceInput>
      <NumberInput source="position" min={0} step={1} helperText="Its place among its siblings, from 0." />
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
      <EditForm>
        <CategoryFields />
      </EditForm>
    </Edit>
  )
}

/** The link that opens the form of a new category inside `parent` (react-admin fills the form from `source`). */
const childOf = (parent: CategoryNode) => `/categories/create?source=${encodeURIComponent(JSON.stringify({ parentId: parent.id }))}`

/** One category and, nested below it, its subcategories: nested lists, which screen readers announce with their depth. */
function Branch({ nodes, depth }: { nodes: CategoryNode[]; depth: number }) {
  return (
    <Box component="ul" sx={{ listStyle: 'none', m: 0, pl: depth === 0 ? 0 : 3, borderLeft: depth === 0 ? 'none' : '1px solid #ccc' }}>
      {nodes.map((node) => (
        <li key={node.id} aria-label={node.name}>
          <Box sx={{ display: 'flex', flexWrap: 'wrap', alignItems: 'baseline', columnGap: 1, py: 0.5, pl: depth === 0 ? 0 : 1 }}>
            <Link to={`/categories/${node.id}`} sx={{ fontWeight: 500 }}>
              {node.name}
            </Link>
            <Typography component="span" variant="body2" color="text.secondary">
              /{node.slug} · position {node.position}
            </Typography>
            {depth < 4 && (
              <Button component={Link} to={childOf(node)} size="small" aria-label={`Add subcategory to ${node.name}`}>
                Add subcategory
              </Button>
            )}
          </Box>
          {node.children && node.children.length > 0 && <Branch nodes={node.children} depth={depth + 1} />}
        </li>
      ))}
    </Box>
  )
}

/** The categories as a tree (GET /categories?tree=true): siblings by name, each a link to its form. */
export function CategoryTree() {
  const logoutIfAccessDenied = useLogoutIfAccessDenied()
  const { data, error, isPending } = useQuery({
    queryKey: ['categories', 'tree'],
    queryFn: async () => {
      try {
        return await categoryTree(api)
      } catch (caught) {
        await logoutIfAccessDenied(caught)
        throw caught
      }
    },
  })
  return (
    <Card sx={{ mt: 2 }}>
      <Title title="Category tree" />
      <CardContent>
        <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 1, alignItems: 'center', mb: 1 }}>
          <Typography component="h2" variant="h6" sx={{ flexGrow: 1 }}>
            Category tree
          </Typography>
          <Button component={Link} to="/categories" size="small">
            Table
          </Button>
          <Button component={Link} to="/categories/create" size="small" variant="contained">
            New root category
          </Button>
        </Box>
        {isPending && <LinearProgress />}
        {error && <Alert severity="error">The categories could not be loaded: {error.message}</Alert>}
        {data && data.length === 0 && <Typography>No categories yet.</Typography>}
        {data && data.length > 0 && (
          <nav aria-label="Category tree">
            <Branch nodes={data} depth={0} />
          </nav>
        )}
      </CardContent>
    </Card>
  )
}
