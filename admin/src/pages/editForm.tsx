import { useEffect, useRef } from 'react'
import { SimpleForm, type SimpleFormProps } from 'react-admin'
import { useFormContext, useFormState, type FieldValues } from 'react-hook-form'

// An edit page first shows the record as React Query has it cached (from the list, or an earlier visit), then the
// one it fetches; a window regaining focus fetches it again, and a save answers with the record as stored. react-admin
// resets the form to each new record, which by default throws away what the admin has typed meanwhile. With
// `keepDirtyValues` the reset keeps the fields the admin changed and takes the others from the new record.
// Module-level: react-admin resets again whenever the options object changes.
const KEEP_EDITS = { keepDirtyValues: true } as const

/** `SimpleForm` for an edit page: a record fetched while the admin types does not undo their edits. */
export function EditForm({ children, ...props }: SimpleFormProps) {
  return (
    <SimpleForm resetOptions={KEEP_EDITS} {...props}>
      <SettleChangedFields />
      {children}
    </SimpleForm>
  )
}

/**
 * After each reset, decides each field the admin changed, by the record the form held before (`base`) and the new
 * one: where the new record has the field as before, the admin's edit stays, compared with the new record again (with
 * `keepDirtyValues` alone Save would be disabled although the edit is unsaved); where the new record holds another
 * value, it is the stored one (the answer of the admin's own save, as the API normalized it: tags as a list, times in
 * UTC) and it replaces the edit. A field the earlier record lacked (a cached list row) keeps the edit.
 */
function SettleChangedFields() {
  const { getValues, setValue } = useFormContext()
  const { defaultValues, dirtyFields } = useFormState()
  const base = useRef<FieldValues | undefined>(undefined)
  useEffect(() => {
    const before = base.current
    base.current = defaultValues
    if (!before || !defaultValues) return
    for (const name of Object.keys(dirtyFields)) {
      const stored = defaultValues[name] as unknown
      const kept = before[name] === undefined || sameValue(stored, before[name])
      setValue(name, kept ? getValues(name) : stored, { shouldDirty: true })
    }
    // Only a new set of defaults (a reset) calls for this; an edit marks its own field.
  }, [defaultValues])
  return null
}

/** Record values compare as JSON: strings, numbers, null, lists and plain objects. */
function sameValue(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b)
}
