import { useEffect } from 'react'
import { SimpleForm, type SimpleFormProps } from 'react-admin'
import { useFormContext, useFormState } from 'react-hook-form'

// An edit page first shows the record as React Query has it cached (from the list, or an earlier visit), then the
// one it fetches; a window regaining focus fetches it again. react-admin resets the form to each new record, which
// by default throws away what the admin has typed meanwhile. With `keepDirtyValues` the reset keeps the fields the
// admin changed and takes the others from the fresh record. Module-level: react-admin resets again whenever the
// options object changes.
const KEEP_EDITS = { keepDirtyValues: true } as const

/** `SimpleForm` for an edit page: a record fetched while the admin types does not undo their edits. */
export function EditForm({ children, ...props }: SimpleFormProps) {
  return (
    <SimpleForm resetOptions={KEEP_EDITS} {...props}>
      <RecheckDirtyAfterReset />
      {children}
    </SimpleForm>
  )
}

// A reset with `keepDirtyValues` leaves `isDirty` false (Save disabled although the kept edits are unsaved) and the
// changed fields marked as changed even when the new record now holds their values (after a save). Once the reset
// has taken the new record as its defaults, each field marked changed is set again to its own value, which compares
// it with the new defaults: an unsaved edit keeps Save enabled, a saved one leaves the form clean.
function RecheckDirtyAfterReset() {
  const { getValues, setValue } = useFormContext()
  const { defaultValues, dirtyFields } = useFormState()
  useEffect(() => {
    for (const name of Object.keys(dirtyFields)) setValue(name, getValues(name), { shouldDirty: true })
    // Only a new set of defaults (a reset) calls for the check; an edit marks its field itself.
  }, [defaultValues])
  return null
}
