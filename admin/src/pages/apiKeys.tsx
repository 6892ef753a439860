import { useState } from 'react'
import {
  Confirm,
  Create,
  Datagrid,
  DateTimeInput,
  FunctionField,
  List,
  SelectInput,
  SimpleForm,
  TextField,
  TextInput,
  required,
  useDataProvider,
  useListContext,
  useNotify,
  useRedirect,
  useRefresh,
} from 'react-admin'
import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  Dialog,
  DialogActions,
  DialogContent,
  DialogTitle,
  Stack,
  TextField as MuiTextField,
  Typography,
} from '@mui/material'
import { api } from '../api/client'
import { API_KEY_ROLES, rotateApiKey, type ApiKey, type ApiKeyWithSecret } from '../api/apiKeys'
import { useSmallScreen } from './small'

const roleNames: Record<ApiKey['staffRole'], string> = { manager: 'Manager', catalog: 'Catalog', fulfillment: 'Fulfillment', support: 'Support' }
const roleChoices = API_KEY_ROLES.map((role) => ({ id: role, name: roleNames[role] }))

const when = (instant: string | null, none: string) => (instant === null ? none : new Date(instant).toLocaleString())

/** Active, Expired or Revoked, as the API would treat the key now. */
function statusOf(key: ApiKey): string {
  if (key.revokedAt !== null) return 'Revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now()) return 'Expired'
  return 'Active'
}

/**
 * A key's secret, shown once: the API never answers it again. A copy button, and the warning that it is the only
 * time; the dialog closes only by its button, so a stray click outside does not lose the secret.
 */
function SecretDialog({ secret, name, onClose }: { secret: string; name: string; onClose: () => void }) {
  const [copied, setCopied] = useState<string | null>(null)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      setCopied('Copied to the clipboard.')
    } catch {
      setCopied('The browser did not allow copying: select the secret and copy it by hand.')
    }
  }
  return (
    <Dialog open aria-labelledby="api-key-secret-title" aria-describedby="api-key-secret-warning" fullWidth maxWidth="sm">
      <DialogTitle id="api-key-secret-title">Secret of {name}</DialogTitle>
      <DialogContent>
        <Alert severity="warning" id="api-key-secret-warning" sx={{ mb: 2 }}>
          Copy this secret now: it will not be shown again. Whoever has it can call the API with this key’s role; send it as{' '}
          <code>Authorization: Bearer …</code>
        </Alert>
        <MuiTextField
          label="Secret"
          value={secret}
          fullWidth
          // On several lines when the dialog is narrower than the secret (a phone): all of it is in sight.
          multiline
          slotProps={{ htmlInput: { readOnly: true, spellCheck: false, style: { fontFamily: 'monospace', wordBreak: 'break-all' } } }}
          onFocus={(event) => event.target.select()}
        />
        <Typography role="status" sx={{ mt: 1, minHeight: '1.5em' }}>
          {copied}
        </Typography>
      </DialogContent>
      <DialogActions>
        <Button onClick={() => void copy()}>Copy</Button>
        <Button variant="contained" onClick={onClose}>
          Done
        </Button>
      </DialogActions>
    </Dialog>
  )
}

/** Rotate (a new secret, shown once) and revoke, each after a confirmation; a revoked key has neither. */
function KeyActions({ apiKey }: { apiKey: ApiKey }) {
  const dataProvider = useDataProvider()
  const notify = useNotify()
  const refresh = useRefresh()
  const [confirming, setConfirming] = useState<'rotate' | 'revoke' | null>(null)
  const [busy, setBusy] = useState(false)
  const [rotated, setRotated] = useState<ApiKeyWithSecret | null>(null)
  if (apiKey.revokedAt !== null) return null
  const act = async (action: 'rotate' | 'revoke') => {
    setConfirming(null)
    setBusy(true)
    try {
      if (action === 'rotate') setRotated(await rotateApiKey(api, apiKey.id))
      else {
        await dataProvider.delete('api-keys', { id: apiKey.id, previousData: apiKey })
        notify(`${apiKey.name} revoked`, { type: 'success' })
        refresh()
      }
    } catch (caught) {
      notify(caught instanceof Error ? caught.message : 'The key could not be changed', { type: 'error' })
    } finally {
      setBusy(false)
    }
  }
  return (
    <Stack direction="row" spacing={1}>
      <Button size="small" disabled={busy} onClick={() => setConfirming('rotate')} aria-label={`Rotate ${apiKey.name}`}>
        Rotate
      </Button>
      <Button size="small" color="error" disabled={busy} onClick={() => setConfirming('revoke')} aria-label={`Revoke ${apiKey.name}`}>
        Revoke
      </Button>
      <Confirm
        isOpen={confirming === 'rotate'}
        title={`Rotate ${apiKey.name}?`}
        content="A new secret is made and shown once; the current secret stops working at once."
        confirm="Rotate"
        onConfirm={() => void act('rotate')}
        onClose={() => setConfirming(null)}
      />
      <Confirm
        isOpen={confirming === 'revoke'}
        title={`Revoke ${apiKey.name}?`}
        content="The key stops working at once, for good. It stays listed as revoked."
        confirm="Revoke"
        onConfirm={() => void act('revoke')}
        onClose={() => setConfirming(null)}
      />
      {rotated && (
        <SecretDialog
          secret={rotated.secret}
          name={rotated.name}
          onClose={() => {
            setRotated(null)
            refresh()
          }}
        />
      )}
    </Stack>
  )
}

/** On a phone: one card per key, its details in lines and its actions below. */
function KeyCards() {
  const { data, isPending } = useListContext<ApiKey>()
  if (isPending || !data) return null
  return (
    <Stack spacing={1} sx={{ p: 1 }} component="ul" aria-label="API keys" style={{ listStyle: 'none', margin: 0 }}>
      {data.map((key) => (
        <Card component="li" key={key.id} variant="outlined">
          <CardContent>
            <Typography component="h2" variant="subtitle1">
              {key.name}
            </Typography>
            <Typography variant="body2">
              {roleNames[key.staffRole]} · {statusOf(key)}
            </Typography>
            <Typography variant="body2" sx={{ fontFamily: 'monospace', overflowWrap: 'anywhere' }}>
              {key.prefix}
            </Typography>
            <Typography variant="body2">Last used: {when(key.lastUsedAt, 'never')}</Typography>
            <Typography variant="body2">Expires: {when(key.expiresAt, 'never')}</Typography>
            <Box sx={{ mt: 1 }}>
              <KeyActions apiKey={key} />
            </Box>
          </CardContent>
        </Card>
      ))}
    </Stack>
  )
}

/** The shop's API keys, newest first, revoked ones included; never a secret. */
export function ApiKeyList() {
  const small = useSmallScreen()
  return (
    <List perPage={25} exporter={false} empty={false} title="API keys">
      {small ? (
        <KeyCards />
      ) : (
        <Datagrid bulkActionButtons={false} rowClick={false} aria-label="API keys">
          <TextField source="name" sortable={false} />
          <FunctionField label="Role" render={(key: ApiKey) => roleNames[key.staffRole]} />
          <FunctionField label="Prefix" render={(key: ApiKey) => <code>{key.prefix}</code>} />
          <FunctionField label="Status" render={statusOf} />
          <FunctionField label="Created" render={(key: ApiKey) => when(key.createdAt, '')} />
          <FunctionField label="Expires" render={(key: ApiKey) => when(key.expiresAt, 'Never')} />
          <FunctionField label="Last used" render={(key: ApiKey) => when(key.lastUsedAt, 'Never')} />
          <FunctionField label="Actions" render={(key: ApiKey) => <KeyActions apiKey={key} />} />
        </Datagrid>
      )}
    </List>
  )
}

/** A new key: its secret is shown once, in a dialog, before going back to the list. */
export function ApiKeyCreate() {
  const redirect = useRedirect()
  const [created, setCreated] = useState<ApiKeyWithSecret | null>(null)
  return (
    <>
      <Create title="New API key" mutationOptions={{ onSuccess: (key: ApiKeyWithSecret) => setCreated(key) }}>
        <SimpleForm>
          <TextInput source="name" validate={required()} fullWidth helperText="What the key is for: the system that will use it." />
          <SelectInput
            source="staffRole"
            label="Role"
            choices={roleChoices}
            validate={required()}
            helperText="What the key may do, as a staff member of this role."
          />
          <DateTimeInput source="expiresAt" label="Expires" helperText="Your local time. Empty: never." />
        </SimpleForm>
      </Create>
      {created && <SecretDialog secret={created.secret} name={created.name} onClose={() => redirect('list', 'api-keys')} />}
    </>
  )
}
