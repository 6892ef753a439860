import { Datagrid, DateField, DateInput, FunctionField, List, SelectInput, TextInput, useListContext, useRecordContext } from 'react-admin'
import { Box, Card, CardContent, Stack, Typography } from '@mui/material'
import { ACTOR_TYPES, type AuditEntry } from '../api/auditLog'
import { useSmallScreen } from './small'

const actorLabels: Record<(typeof ACTOR_TYPES)[number], string> = { user: 'Staff member', api_key: 'API key', system: 'The shop (a job)' }
const actorChoices = ACTOR_TYPES.map((type) => ({ id: type, name: actorLabels[type] }))

const filters = [
  <TextInput key="entityType" source="entityType" label="Resource type" helperText="product, order, user…" alwaysOn />,
  <TextInput key="action" source="action" label="Action" helperText="product.update" alwaysOn />,
  <SelectInput key="actorType" source="actorType" label="Actor" choices={actorChoices} emptyText="Anyone" alwaysOn />,
  <TextInput key="actorId" source="actorId" label="Actor id" />,
  <TextInput key="entityId" source="entityId" label="Resource id" />,
  <DateInput key="from" source="from" label="From" />,
  <DateInput key="to" source="to" label="Until" />,
]

/** Who made the change: a user or a key by name (and id), or the job's name. */
function actorText(entry: AuditEntry): string {
  const { type, id, name } = entry.actor
  if (type === 'system') return `The shop (${name ?? 'a job'})`
  const who = name ?? 'deleted'
  return type === 'api_key' ? `API key ${who} (#${String(id)})` : `${who} (#${String(id)})`
}

const resourceText = (entry: AuditEntry) => (entry.entityId === null ? entry.entityType : `${entry.entityType} ${entry.entityId}`)

/** One side of a change, as the API answered the resource (secrets already redacted by the shop). */
function Side({ label, value }: { label: string; value: unknown }) {
  return (
    <Box sx={{ flex: 1, minWidth: 0 }}>
      <Typography component="h3" variant="subtitle2" gutterBottom>
        {label}
      </Typography>
      {value === null || value === undefined ? (
        <Typography variant="body2">Nothing</Typography>
      ) : (
        <Box
          component="pre"
          tabIndex={0}
          aria-label={label}
          sx={{
            m: 0,
            p: 1,
            bgcolor: 'grey.100',
            borderRadius: 1,
            fontSize: 12,
            overflow: 'auto',
            maxHeight: 360,
            whiteSpace: 'pre-wrap',
            wordBreak: 'break-word',
          }}
        >
          {JSON.stringify(value, null, 2)}
        </Box>
      )}
    </Box>
  )
}

/** The entry's resource before and after the change, and where the request came from. */
function Change({ entry }: { entry: AuditEntry }) {
  return (
    <Stack spacing={1}>
      <Stack direction={{ xs: 'column', md: 'row' }} spacing={2}>
        <Side label="Before" value={entry.before} />
        <Side label="After" value={entry.after} />
      </Stack>
      <Typography variant="body2">
        Request {entry.requestId ?? '—'} · {entry.ip ?? '—'} · {entry.userAgent ?? '—'}
      </Typography>
    </Stack>
  )
}

function ExpandedChange() {
  const entry = useRecordContext<AuditEntry>()
  return entry ? <Change entry={entry} /> : null
}

/** On a phone: one card per entry, its change behind a disclosure. */
function EntryCards() {
  const { data } = useListContext<AuditEntry>()
  return (
    <Stack spacing={1} sx={{ p: 1 }} component="ul" aria-label="Audit log" style={{ listStyle: 'none', margin: 0 }}>
      {(data ?? []).map((entry) => (
        <Card component="li" key={entry.id} variant="outlined">
          <CardContent>
            <Typography variant="subtitle2" component="p">
              {entry.action} · {resourceText(entry)}
            </Typography>
            <Typography variant="body2">
              {actorText(entry)} · {new Date(entry.at).toLocaleString()}
            </Typography>
            <Box component="details" sx={{ mt: 1 }}>
              <Box component="summary" sx={{ cursor: 'pointer' }}>
                Before and after
              </Box>
              <Change entry={entry} />
            </Box>
          </CardContent>
        </Card>
      ))}
    </Stack>
  )
}

/** The audit log: who changed what and when, newest first; read only (no entry is ever changed or deleted). */
export function AuditLogList() {
  const small = useSmallScreen()
  return (
    <List title="Audit log" filters={filters} perPage={25} exporter={false} empty={false} sort={{ field: 'at', order: 'DESC' }}>
      {small ? (
        <EntryCards />
      ) : (
        <Datagrid bulkActionButtons={false} rowClick="expand" expand={<ExpandedChange />} aria-label="Audit log">
          <DateField source="at" label="When" showTime sortable={false} />
          <FunctionField label="Who" render={actorText} />
          <FunctionField source="action" label="Action" sortable={false} render={(entry: AuditEntry) => entry.action} />
          <FunctionField label="Resource" render={resourceText} />
        </Datagrid>
      )}
    </List>
  )
}
