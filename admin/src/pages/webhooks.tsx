import { useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import {
  BooleanField,
  BooleanInput,
  CheckboxGroupInput,
  Create,
  Datagrid,
  DateField,
  DeleteWithConfirmButton,
  Edit,
  FunctionField,
  List,
  SimpleForm,
  TextField,
  TextInput,
  required,
  useNotify,
  useRecordContext,
  useRedirect,
} from 'react-admin'
import { Alert, Box, Button, Card, CardContent, Table, TableBody, TableCell, TableHead, TableRow, Typography } from '@mui/material'
import { api } from '../api/client'
import { listDeliveries, retryDelivery, WEBHOOK_EVENTS, type Webhook } from '../api/webhooks'
import { useSmallScreen } from './small'
import { EditForm } from './editForm'

/** Read by screen readers, not shown. */
const hidden = { position: 'absolute', width: 1, height: 1, overflow: 'hidden', clip: 'rect(0 0 0 0)', whiteSpace: 'nowrap' } as const

const eventChoices = WEBHOOK_EVENTS.map((event) => ({ id: event, name: event }))

/** Webhook endpoints: where the shop posts its events (signed), and what each delivery did. */
export function WebhookList() {
  return (
    <List perPage={25} exporter={false} sort={{ field: 'id', order: 'ASC' }} empty={false}>
      <Datagrid rowClick="edit" bulkActionButtons={false} aria-label="Webhooks">
        <TextField source="url" label="URL" sortable={false} />
        <FunctionField label="Events" render={(webhook: Webhook) => webhook.events.join(', ')} />
        <BooleanField source="active" sortable={false} />
        <DateField source="createdAt" label="Added" sortable={false} />
        <DeleteWithConfirmButton
          mutationMode="pessimistic"
          confirmTitle="Delete this webhook?"
          confirmContent="Its deliveries go with it; pending ones are not sent."
        />
      </Datagrid>
    </List>
  )
}

function WebhookFields({ editing }: { editing: boolean }) {
  // On a phone the events are a column: in a row they made the form, and the page, wider than the screen.
  const small = useSmallScreen()
  return (
    <>
      <TextInput source="url" label="URL" validate={required()} fullWidth helperText="An https address the shop posts its events to." />
      <CheckboxGroupInput source="events" choices={eventChoices} row={!small} validate={required('Pick at least one event')} />
      <TextInput source="description" fullWidth />
      {editing && <BooleanInput source="active" helperText="An inactive webhook is sent nothing." />}
    </>
  )
}

/** The API shows a new webhook's signing secret once, in the answer to its creation: the dashboard shows it then. */
export function WebhookCreate() {
  const notify = useNotify()
  const redirect = useRedirect()
  return (
    <Create
      title="New webhook"
      mutationOptions={{
        onSuccess: (webhook: Webhook) => {
          notify(`Webhook added. Its signing secret, shown only now: ${webhook.secret ?? '(none)'}`, { type: 'info', autoHideDuration: null })
          redirect('edit', 'webhooks', webhook.id)
        },
      }}
    >
      <SimpleForm defaultValues={{ events: ['order.created', 'order.paid'] }}>
        <WebhookFields editing={false} />
      </SimpleForm>
    </Create>
  )
}

function Deliveries() {
  const webhook = useRecordContext<Webhook>()
  const notify = useNotify()
  const queryClient = useQueryClient()
  const [retrying, setRetrying] = useState<string | null>(null)
  const id = webhook?.id
  const { data, error, isPending } = useQuery({ queryKey: ['webhook-deliveries', id], queryFn: () => listDeliveries(api, id!), enabled: id !== undefined })
  if (!webhook) return null
  const retry = async (deliveryId: string) => {
    setRetrying(deliveryId)
    try {
      await retryDelivery(api, webhook.id, deliveryId)
      notify('Delivery queued to be sent again now', { type: 'success' })
      await queryClient.invalidateQueries({ queryKey: ['webhook-deliveries', id] })
    } catch (caught) {
      notify(caught instanceof Error ? caught.message : 'The delivery could not be retried', { type: 'error' })
    } finally {
      setRetrying(null)
    }
  }
  return (
    <Card sx={{ mt: 2 }}>
      <CardContent>
        <Typography component="h2" variant="h6" gutterBottom>
          Deliveries{data?.total != null ? ` (${data.total})` : ''}
        </Typography>
        {isPending && <Typography>Loading the deliveries…</Typography>}
        {error && <Alert severity="error">The deliveries could not be loaded: {error.message}</Alert>}
        {data && data.data.length === 0 && <Typography>Nothing has been sent to this webhook yet.</Typography>}
        {data && data.data.length > 0 && (
          // Scrolls sideways on its own when wider than the screen: its width (0) does not count towards the page's, and
          // it holds the hidden "Actions" heading (positioned), which would otherwise stick out of it and widen the page.
          <Box sx={{ overflowX: 'auto', width: 0, minWidth: '100%', position: 'relative' }}>
            <Table size="small" aria-label="Deliveries">
              <TableHead>
                <TableRow>
                  <TableCell>Event</TableCell>
                  <TableCell>Status</TableCell>
                  <TableCell align="right">Attempts</TableCell>
                  <TableCell>Last answer</TableCell>
                  <TableCell>Created</TableCell>
                  <TableCell>
                    <span style={hidden}>Actions</span>
                  </TableCell>
                </TableRow>
              </TableHead>
              <TableBody>
                {data.data.map((delivery) => (
                  <TableRow key={delivery.id}>
                    <TableCell>{delivery.event}</TableCell>
                    <TableCell>{delivery.status}</TableCell>
                    <TableCell align="right">{delivery.attempts}</TableCell>
                    <TableCell>{delivery.lastStatusCode ?? delivery.lastError ?? '—'}</TableCell>
                    <TableCell>{new Date(delivery.createdAt).toLocaleString()}</TableCell>
                    <TableCell>
                      {delivery.status !== 'pending' && (
                        <Button
                          size="small"
                          disabled={retrying !== null}
                          onClick={() => void retry(delivery.id)}
                          aria-label={`Retry the ${delivery.event} delivery`}
                        >
                          Retry
                        </Button>
                      )}
                    </TableCell>
                  </TableRow>
                ))}
              </TableBody>
            </Table>
          </Box>
        )}
      </CardContent>
    </Card>
  )
}

export function WebhookEdit() {
  return (
    <Edit mutationMode="pessimistic" title="Webhook" redirect={false}>
      <EditForm>
        <WebhookFields editing />
      </EditForm>
      <Deliveries />
    </Edit>
  )
}
