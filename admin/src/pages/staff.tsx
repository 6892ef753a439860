import {
  Create,
  Datagrid,
  DeleteWithConfirmButton,
  Edit,
  EditButton,
  EmailField,
  List,
  PasswordInput,
  SelectInput,
  SimpleForm,
  SimpleList,
  TextField,
  TextInput,
  email,
  required,
  useGetIdentity,
  useRecordContext,
} from 'react-admin'
import { STAFF_ROLES, type StaffMember } from '../api/staff'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

const roleNames: Record<(typeof STAFF_ROLES)[number], string> = {
  owner: 'Owner: everything',
  manager: 'Manager: everything but staff',
  catalog: 'Catalog: products and categories',
  fulfillment: 'Fulfillment: orders, shipments, returns',
  support: 'Support: orders, returns, customers',
}
const choices = STAFF_ROLES.map((role) => ({ id: role, name: roleNames[role] }))

/** The admins and their staff roles (owners only). The API's refusals (the last owner: 409) are shown as said. */
export function StaffList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} sort={{ field: 'id', order: 'ASC' }} empty={false} title="Staff">
      {small ? (
        <SimpleList<StaffMember> primaryText={(user) => user.name} secondaryText={(user) => `${user.email} · ${user.staffRole ?? ''}`} linkType="edit" />
      ) : (
        <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Staff">
          <TextField source="name" sortable={false} />
          <EmailField source="email" sortable={false} />
          <TextField source="staffRole" label="Staff role" sortable={false} />
          <EditButton label="Change role" />
          <DeleteStaff />
        </Datagrid>
      )}
    </List>
  )
}

/** Deleting oneself is refused by the API (409): the button is not offered on one's own row. */
function DeleteStaff() {
  const user = useRecordContext<StaffMember>()
  const { identity } = useGetIdentity()
  if (!user || String(user.id) === String(identity?.id)) return null
  return (
    <DeleteWithConfirmButton mutationMode="pessimistic" confirmTitle={`Delete ${user.email}?`} confirmContent="The admin's account and sessions are removed." />
  )
}

/** One's own staff role cannot change (the API says so, 403): the field is locked on one's own account. */
function StaffRoleInput() {
  const user = useRecordContext<StaffMember>()
  const { identity } = useGetIdentity()
  const self = user && String(user.id) === String(identity?.id)
  return (
    <SelectInput
      source="staffRole"
      label="Staff role"
      choices={choices}
      validate={required()}
      disabled={!!self}
      helperText={self ? 'You cannot change your own staff role.' : 'Takes effect at once: their sessions end.'}
    />
  )
}

export function StaffEdit() {
  return (
    <Edit mutationMode="pessimistic" redirect="list" title="Change staff role">
      <EditForm>
        <TextField source="name" />
        <EmailField source="email" />
        <StaffRoleInput />
      </EditForm>
    </Edit>
  )
}

/** A new admin with a staff role. */
export function StaffCreate() {
  return (
    <Create redirect="list" title="New admin">
      <SimpleForm defaultValues={{ staffRole: 'support' }}>
        <TextInput source="name" validate={required()} fullWidth />
        <TextInput source="email" type="email" validate={[required(), email()]} fullWidth />
        <PasswordInput source="password" validate={required()} helperText="At least 6 characters." />
        <SelectInput source="staffRole" label="Staff role" choices={choices} validate={required()} />
      </SimpleForm>
    </Create>
  )
}
