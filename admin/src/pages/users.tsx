import {
  Button,
  Create,
  Datagrid,
  DateField,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  EmailField,
  Link,
  List,
  PasswordInput,
  SelectInput,
  SimpleList,
  SimpleForm,
  TextField,
  TextInput,
  TopToolbar,
  email,
  required,
  useGetIdentity,
  useRecordContext,
} from 'react-admin'
import type { MouseEvent } from 'react'
import ReceiptIcon from '@mui/icons-material/Receipt'
import type { User } from '../api/users'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

/** The orders list filtered by one customer (GET /orders?userId=). */
export const ordersOf = (userId: number | string) => `/orders?filter=${encodeURIComponent(JSON.stringify({ userId: Number(userId) }))}`

/** A link to the user's orders, on their row and on their page. */
function UserOrdersButton() {
  const user = useRecordContext<User>()
  if (!user) return null
  return (
    <Button
      component={Link}
      label="Orders"
      to={ordersOf(user.id)}
      onClick={(event: MouseEvent) => event.stopPropagation()}
      aria-label={`Orders of ${user.email}`}
    >
      <ReceiptIcon />
    </Button>
  )
}

const roles = [
  { id: 'customer', name: 'Customer' },
  { id: 'admin', name: 'Admin' },
]

/** Deleting oneself is refused by the API (409): the button is not offered on one's own row. */
function DeleteUser() {
  const user = useRecordContext<User>()
  const { identity } = useGetIdentity()
  if (!user || String(user.id) === String(identity?.id)) return null
  return (
    <DeleteWithConfirmButton
      mutationMode="pessimistic"
      confirmTitle={`Delete ${user.email}?`}
      confirmContent="The account, its sessions and its cart are removed. Its orders stay."
    />
  )
}

export function UserList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} sort={{ field: 'id', order: 'ASC' }} empty={false}>
      {small ? (
        <SimpleList<User> primaryText={(user) => user.name} secondaryText={(user) => `${user.email} · ${user.role}`} linkType="edit" />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Users">
          <TextField source="name" sortable={false} />
          <EmailField source="email" sortable={false} />
          <TextField source="role" sortable={false} />
          <DateField source="createdAt" label="Joined" sortable={false} />
          <UserOrdersButton />
          <EditButton label="Edit role" />
          <DeleteUser />
        </Datagrid>
      )}
    </List>
  )
}

/** Name, e-mail and role; one's own role cannot change (the API says so, 403), so the field is locked on one's own account. */
function RoleInput() {
  const user = useRecordContext<User>()
  const { identity } = useGetIdentity()
  const self = user && String(user.id) === String(identity?.id)
  return <SelectInput source="role" choices={roles} validate={required()} disabled={!!self} helperText={self ? 'You cannot change your own role.' : false} />
}

export function UserEdit() {
  return (
    <Edit
      mutationMode="pessimistic"
      redirect="list"
      title="Edit user"
      actions={
        <TopToolbar>
          <UserOrdersButton />
        </TopToolbar>
      }
    >
      <EditForm>
        <TextInput source="name" validate={required()} fullWidth />
        <TextInput source="email" type="email" validate={[required(), email()]} fullWidth />
        <RoleInput />
      </EditForm>
    </Edit>
  )
}

/** A new account, an admin unless said otherwise. */
export function UserCreate() {
  return (
    <Create redirect="list" title="New user">
      <SimpleForm defaultValues={{ role: 'admin' }}>
        <TextInput source="name" validate={required()} fullWidth />
        <TextInput source="email" type="email" validate={[required(), email()]} fullWidth />
        <PasswordInput source="password" validate={required()} helperText="At least 6 characters." />
        <SelectInput source="role" choices={roles} validate={required()} />
      </SimpleForm>
    </Create>
  )
}
