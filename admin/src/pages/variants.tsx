import { memo, useCallback, useEffect, useId, useMemo, useState, type FormEvent } from 'react'
import { Confirm, HttpError, useLogoutIfAccessDenied, useNotify, useRecordContext } from 'react-admin'
import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  IconButton,
  Stack,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material'
import DeleteIcon from '@mui/icons-material/Delete'
import { api } from '../api/client'
import type { FullProduct } from '../api/products'
import { tagsOf } from '../api/products'
import {
  addOption,
  BATCH_MAX,
  createVariants,
  deleteVariant,
  missingCombinations,
  removeOption,
  removeValue,
  updateVariant,
  type ProductOption,
  type Variant,
  type VariantChange,
} from '../api/variants'
import { unwrap } from '../api/answers'
import { useSmallScreen } from './small'

/** Read by screen readers, not shown. */
const hidden = { position: 'absolute', width: 1, height: 1, overflow: 'hidden', clip: 'rect(0 0 0 0)', whiteSpace: 'nowrap' } as const

/** What a failed call says, and the field of the form it is about (the problem's `field`, kept by `unwrap`). */
export interface Failure {
  message: string
  field?: string
}

function failureOf(error: unknown): Failure {
  const message = error instanceof Error ? error.message : String(error)
  if (!(error instanceof HttpError)) return { message }
  const body: unknown = error.body
  const errors = typeof body === 'object' && body !== null && 'errors' in body ? body.errors : undefined
  const field = typeof errors === 'object' && errors !== null ? Object.keys(errors).find((key) => key !== 'root') : undefined
  return field ? { message, field } : { message }
}

/** A call of the editor: a 401 ends the session as any page's would; any other failure is the caller's to show. */
export function useCall() {
  const logoutIfAccessDenied = useLogoutIfAccessDenied()
  return useCallback(
    async <T,>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; failure: Failure }> => {
      try {
        return { ok: true, value: await call() }
      } catch (error) {
        await logoutIfAccessDenied(error)
        return { ok: false, failure: failureOf(error) }
      }
    },
    [logoutIfAccessDenied],
  )
}

const titleOf = (variant: Variant) => variant.title ?? 'Default'

/**
 * A product's options and variants, on its edit page. Every write answers what changed (the product for an option,
 * the variant for a row), which replaces what the page shows: a row saved never reads the product again, so the page
 * stays quick with 100 variants. A refusal (409, 422) is shown beside the option, value or row it is about.
 */
export function VariantsEditor() {
  const record = useRecordContext<FullProduct>()
  if (!record?.variants) return null
  // Read again (the form above saved), the editor starts over from the product as it now is.
  return <Editor key={`${record.id}:${record.updatedAt}`} initial={record} />
}

function Editor({ initial }: { initial: FullProduct }) {
  const call = useCall()
  const notify = useNotify()
  const small = useSmallScreen()
  const [options, setOptions] = useState<ProductOption[]>(initial.options)
  const [variants, setVariants] = useState<Variant[]>(initial.variants)
  /** Values added on the page, by option name: saved with the first variants that use them (the API has no other way). */
  const [added, setAdded] = useState<Record<string, string[]>>({})
  const [optionErrors, setOptionErrors] = useState<Record<number, string>>({})
  const [valueErrors, setValueErrors] = useState<Record<number, string>>({})
  const [generateError, setGenerateError] = useState<string | null>(null)
  const [newPrice, setNewPrice] = useState(initial.price.toFixed(2))
  const [busy, setBusy] = useState(false)
  const productId = initial.id

  const showProduct = useCallback((product: FullProduct) => {
    setOptions(product.options)
    setVariants(product.variants)
  }, [])

  const values = useMemo(() => {
    const all: Record<string, string[]> = {}
    for (const option of options) all[option.name] = [...option.values.map((value) => value.value), ...(added[option.name] ?? [])]
    return all
  }, [options, added])
  const missing = useMemo(() => missingCombinations(options, values, variants), [options, values, variants])

  const dropOption = async (option: ProductOption) => {
    setBusy(true)
    const result = await call(() => removeOption(api, productId, option.id))
    setBusy(false)
    if (result.ok) {
      showProduct(result.value)
      setOptionErrors(({ [option.id]: _, ...rest }) => rest)
      notify(`Option ${option.name} removed`, { type: 'success' })
    } else setOptionErrors((errors) => ({ ...errors, [option.id]: result.failure.message }))
  }

  const dropValue = async (option: ProductOption, valueId: number, value: string) => {
    setBusy(true)
    const result = await call(() => removeValue(api, productId, option.id, valueId))
    setBusy(false)
    if (result.ok) {
      showProduct(result.value)
      setValueErrors(({ [valueId]: _, ...rest }) => rest)
      notify(`Value ${value} removed`, { type: 'success' })
    } else setValueErrors((errors) => ({ ...errors, [valueId]: result.failure.message }))
  }

  const generate = async () => {
    setBusy(true)
    setGenerateError(null)
    // Batches of 100 (the API's limit), each all or nothing; a refusal stops there and says so.
    for (let start = 0; start < missing.length; start += BATCH_MAX) {
      const batch = missing.slice(start, start + BATCH_MAX).map((options) => ({ options, price: newPrice.trim(), stock: 0 }))
      const result = await call(() => createVariants(api, productId, batch))
      if (!result.ok) {
        setGenerateError(start === 0 ? result.failure.message : `${result.failure.message} (${start} variants were created before this)`)
        break
      }
    }
    // New values joined their options: the product once, for its options and variants as they now are.
    const product = await call(async () => unwrap(await api.GET('/products/{id}', { params: { path: { id: String(productId) } } })))
    if (product.ok) {
      showProduct(product.value)
      setAdded({})
    }
    setBusy(false)
  }

  const onSaved = useCallback((saved: Variant) => setVariants((rows) => rows.map((row) => (row.id === saved.id ? saved : row))), [])
  const onDeleted = useCallback((id: number) => setVariants((rows) => rows.filter((row) => row.id !== id)), [])

  return (
    <Card sx={{ mt: 2 }} component="section" aria-labelledby="variants-heading">
      <CardContent>
        <Typography component="h2" variant="h6" id="variants-heading" gutterBottom>
          Options and variants
        </Typography>
        <Typography variant="body2" sx={{ mb: 2 }}>
          Options (size, colour…) and their values make the variants; each variant has its own price, stock and SKU.
        </Typography>
        <Stack spacing={2}>
          {options.map((option) => (
            <OptionBox
              key={option.id}
              option={option}
              added={added[option.name] ?? []}
              busy={busy}
              error={optionErrors[option.id]}
              valueErrors={valueErrors}
              onRemove={() => void dropOption(option)}
              onRemoveValue={(valueId, value) => void dropValue(option, valueId, value)}
              onAdd={(value) => setAdded((all) => ({ ...all, [option.name]: [...(all[option.name] ?? []), value] }))}
              onForget={(value) => setAdded((all) => ({ ...all, [option.name]: (all[option.name] ?? []).filter((v) => v !== value) }))}
            />
          ))}
          <NewOption productId={productId} onAdded={showProduct} />
        </Stack>

        {options.length > 0 && (
          <Box component="section" aria-labelledby="matrix-heading" sx={{ mt: 3 }}>
            <Typography component="h3" variant="subtitle1" id="matrix-heading" gutterBottom>
              Variants ({variants.length})
            </Typography>
            <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 2, alignItems: 'flex-start', mb: 2 }}>
              <TextField
                label="Price of new variants"
                size="small"
                fullWidth={false}
                sx={{ width: 180 }}
                value={newPrice}
                onChange={(event) => setNewPrice(event.target.value)}
                slotProps={{ htmlInput: { inputMode: 'decimal' } }}
              />
              <Button variant="contained" disabled={busy || missing.length === 0} onClick={() => void generate()} aria-describedby="generate-note">
                Generate combinations
              </Button>
              <Typography id="generate-note" variant="body2" sx={{ alignSelf: 'center' }}>
                {missing.length === 0
                  ? 'Every combination has its variant.'
                  : `${missing.length} missing ${missing.length === 1 ? 'combination' : 'combinations'}, created at stock 0.`}
              </Typography>
            </Box>
            {generateError && (
              <Alert severity="error" role="alert" sx={{ mb: 2 }}>
                {generateError}
              </Alert>
            )}
            {small ? (
              <Box component="ul" aria-label="Variants" sx={{ listStyle: 'none', p: 0, m: 0 }}>
                {variants.map((variant) => (
                  <VariantRow key={variant.id} variant={variant} images={initial.images} small onSaved={onSaved} onDeleted={onDeleted} />
                ))}
              </Box>
            ) : (
              // Scrolls sideways on its own when the screen is narrow, without widening the page.
              <Box sx={{ overflowX: 'auto', width: 0, minWidth: '100%' }}>
                <Table size="small" aria-label="Variants">
                  <TableHead>
                    <TableRow>
                      <TableCell>Variant</TableCell>
                      <TableCell>Price</TableCell>
                      <TableCell>Stock</TableCell>
                      <TableCell>SKU</TableCell>
                      <TableCell>Image</TableCell>
                      <TableCell>
                        <span style={hidden}>Actions</span>
                      </TableCell>
                    </TableRow>
                  </TableHead>
                  <TableBody>
                    {variants.map((variant) => (
                      <VariantRow key={variant.id} variant={variant} images={initial.images} small={false} onSaved={onSaved} onDeleted={onDeleted} />
                    ))}
                  </TableBody>
                </Table>
              </Box>
            )}
          </Box>
        )}
      </CardContent>
    </Card>
  )
}

interface OptionBoxProps {
  option: ProductOption
  added: string[]
  busy: boolean
  error: string | undefined
  valueErrors: Record<number, string>
  onRemove: () => void
  onRemoveValue: (valueId: number, value: string) => void
  onAdd: (value: string) => void
  onForget: (value: string) => void
}

/** One option: its values (each removable), a value to add, and the option's removal; the API's refusals beside each. */
function OptionBox({ option, added, busy, error, valueErrors, onRemove, onRemoveValue, onAdd, onForget }: OptionBoxProps) {
  const [value, setValue] = useState('')
  const [problem, setProblem] = useState<string | null>(null)
  const errorId = useId()
  const add = (event: FormEvent) => {
    event.preventDefault()
    const trimmed = value.trim()
    if (!trimmed) return
    const taken = [...option.values.map((v) => v.value), ...added].some((v) => v.toLowerCase() === trimmed.toLowerCase())
    // Said in the API's words: it would refuse the value the same way.
    if (taken) return setProblem(`El valor ya existe: ${trimmed}`)
    setProblem(null)
    onAdd(trimmed)
    setValue('')
  }
  return (
    <Box component="section" aria-label={`Option ${option.name}`} sx={{ border: '1px solid #ddd', borderRadius: 1, p: 1.5 }}>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1 }}>
        <Typography component="h3" variant="subtitle1" sx={{ flexGrow: 1 }}>
          {option.name}
        </Typography>
        <Button size="small" color="error" disabled={busy} onClick={onRemove} aria-describedby={error ? errorId : undefined}>
          Remove option {option.name}
        </Button>
      </Box>
      {error && (
        <Alert severity="error" role="alert" id={errorId} sx={{ my: 1 }}>
          {error}
        </Alert>
      )}
      <Box component="ul" aria-label={`Values of ${option.name}`} sx={{ listStyle: 'none', p: 0, m: 0, display: 'flex', flexWrap: 'wrap', gap: 1 }}>
        {option.values.map((v) => (
          <Box component="li" key={v.id} sx={{ border: '1px solid #bbb', borderRadius: 4, pl: 1.5, display: 'flex', alignItems: 'center', flexWrap: 'wrap' }}>
            {v.value}
            <IconButton
              size="small"
              disabled={busy}
              onClick={() => onRemoveValue(v.id, v.value)}
              aria-label={`Remove value ${v.value} of ${option.name}`}
              aria-describedby={valueErrors[v.id] ? `value-error-${v.id}` : undefined}
            >
              <DeleteIcon fontSize="small" />
            </IconButton>
            {valueErrors[v.id] && (
              <Typography role="alert" id={`value-error-${v.id}`} variant="body2" color="error" sx={{ pr: 1.5 }}>
                {valueErrors[v.id]}
              </Typography>
            )}
          </Box>
        ))}
        {added.map((v) => (
          <Box component="li" key={`new:${v}`} sx={{ border: '1px dashed #555', borderRadius: 4, pl: 1.5, display: 'flex', alignItems: 'center' }}>
            {v} <span style={{ marginLeft: 4, fontStyle: 'italic' }}>(new)</span>
            <IconButton size="small" onClick={() => onForget(v)} aria-label={`Remove value ${v} of ${option.name}`}>
              <DeleteIcon fontSize="small" />
            </IconButton>
          </Box>
        ))}
      </Box>
      <Box component="form" onSubmit={add} sx={{ display: 'flex', flexWrap: 'wrap', gap: 1, mt: 1, alignItems: 'flex-start' }}>
        <TextField
          size="small"
          fullWidth={false}
          sx={{ width: { xs: '100%', sm: 220 } }}
          label={`New value of ${option.name}`}
          value={value}
          onChange={(event) => setValue(event.target.value)}
          error={problem !== null}
          helperText={problem ?? 'Saved with the variants that use it (Generate combinations).'}
          slotProps={{ htmlInput: { maxLength: 100 }, formHelperText: problem ? { role: 'alert' } : {} }}
        />
        <Button type="submit" variant="outlined" size="small" sx={{ mt: 0.5 }}>
          Add value
        </Button>
      </Box>
    </Box>
  )
}

/** POST /products/:id/options: a name, the value every existing variant takes, and other values (comma-separated). */
function NewOption({ productId, onAdded }: { productId: number; onAdded: (product: FullProduct) => void }) {
  const call = useCall()
  const notify = useNotify()
  const [name, setName] = useState('')
  const [defaultValue, setDefaultValue] = useState('')
  const [others, setOthers] = useState('')
  const [failure, setFailure] = useState<Failure | null>(null)
  const [sending, setSending] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setSending(true)
    const option = { name: name.trim(), defaultValue: defaultValue.trim(), values: tagsOf(others) }
    const result = await call(() => addOption(api, productId, option))
    setSending(false)
    if (!result.ok) return setFailure(result.failure)
    setFailure(null)
    setName('')
    setDefaultValue('')
    setOthers('')
    onAdded(result.value)
    notify(`Option ${option.name} added`, { type: 'success' })
  }
  const beside = (field: string) => (failure?.field === field ? failure.message : undefined)
  const elsewhere = failure && !['name', 'defaultValue', 'values'].includes(failure.field ?? '') ? failure.message : null
  return (
    <Box
      component="form"
      onSubmit={(event) => void submit(event)}
      aria-labelledby="new-option-heading"
      sx={{ border: '1px dashed #999', borderRadius: 1, p: 1.5 }}
    >
      <Typography component="h3" variant="subtitle1" id="new-option-heading" gutterBottom>
        Add an option
      </Typography>
      <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 1, alignItems: 'flex-start' }}>
        <FieldWithError label="Option name" value={name} onChange={setName} error={beside('name')} help="Such as Size or Colour" />
        <FieldWithError
          label="Default value"
          value={defaultValue}
          onChange={setDefaultValue}
          error={beside('defaultValue')}
          help="Every existing variant takes it"
        />
        <FieldWithError label="Other values" value={others} onChange={setOthers} error={beside('values')} help="Comma-separated" />
        <Button type="submit" variant="outlined" disabled={sending} sx={{ mt: 0.5 }}>
          Add option
        </Button>
      </Box>
      {elsewhere && (
        <Alert severity="error" role="alert" sx={{ mt: 1 }}>
          {elsewhere}
        </Alert>
      )}
    </Box>
  )
}

function FieldWithError({
  label,
  value,
  onChange,
  error,
  help,
}: {
  label: string
  value: string
  onChange: (value: string) => void
  error?: string
  help: string
}) {
  return (
    <TextField
      size="small"
      fullWidth={false}
      sx={{ width: { xs: '100%', sm: 220 } }}
      label={label}
      value={value}
      onChange={(event) => onChange(event.target.value)}
      error={error !== undefined}
      helperText={error ?? help}
      slotProps={{ formHelperText: error ? { role: 'alert' } : {} }}
    />
  )
}

interface RowProps {
  variant: Variant
  /** The product's images as the page loaded them: the choices of the variant's own image. */
  images: FullProduct['images']
  small: boolean
  onSaved: (variant: Variant) => void
  onDeleted: (id: number) => void
}

/**
 * One variant: price, stock, SKU and image edited in place and saved with the row's Save (PATCH /variants/:id, whose answer
 * replaces the row), or the row deleted after confirmation. Its own state, so typing in one row redraws no other.
 */
const VariantRow = memo(function VariantRow({ variant, images, small, onSaved, onDeleted }: RowProps) {
  const call = useCall()
  const [price, setPrice] = useState(variant.price.toFixed(2))
  const [stock, setStock] = useState(String(variant.stock))
  const [sku, setSku] = useState(variant.sku ?? '')
  const [imageId, setImageId] = useState(String(variant.imageId ?? ''))
  const [failure, setFailure] = useState<Failure | null>(null)
  const [sending, setSending] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const errorId = `variant-${variant.id}-error`
  const title = titleOf(variant)

  // The row as the API answered it (a save) is what it shows.
  useEffect(() => {
    setPrice(variant.price.toFixed(2))
    setStock(String(variant.stock))
    setSku(variant.sku ?? '')
    setImageId(String(variant.imageId ?? ''))
  }, [variant])

  const change: VariantChange = {}
  if (Number(price) !== variant.price || price.trim() === '') change.price = price.trim()
  if (stock !== String(variant.stock)) change.stock = Number(stock)
  if (sku.trim() !== (variant.sku ?? '')) change.sku = sku.trim() === '' ? null : sku.trim()
  if (imageId !== String(variant.imageId ?? '')) change.imageId = imageId === '' ? null : Number(imageId)
  const dirty = Object.keys(change).length > 0

  const save = async () => {
    if (!dirty) return
    setSending(true)
    const result = await call(() => updateVariant(api, variant.id, change))
    setSending(false)
    if (!result.ok) return setFailure(result.failure)
    setFailure(null)
    onSaved(result.value)
  }
  const remove = async () => {
    setConfirming(false)
    setSending(true)
    const result = await call(() => deleteVariant(api, variant.id))
    setSending(false)
    if (!result.ok) return setFailure(result.failure)
    onDeleted(variant.id)
  }

  const field = (name: 'price' | 'stock' | 'sku', label: string, value: string, set: (value: string) => void, extra: object = {}) => (
    <TextField
      size="small"
      variant="outlined"
      fullWidth={small}
      label={small ? label : undefined}
      value={value}
      onChange={(event) => set(event.target.value)}
      onKeyDown={(event) => {
        if (event.key === 'Enter') void save()
      }}
      error={failure?.field === name}
      sx={small ? undefined : { width: name === 'sku' ? 180 : 110 }}
      slotProps={{
        htmlInput: {
          'aria-label': `${label} of ${title}`,
          'aria-invalid': failure?.field === name ? true : undefined,
          'aria-describedby': failure ? errorId : undefined,
          ...extra,
        },
      }}
    />
  )
  const inputs = {
    price: field('price', 'Price', price, setPrice, { inputMode: 'decimal' }),
    stock: field('stock', 'Stock', stock, setStock, { inputMode: 'numeric', pattern: '[0-9]*' }),
    sku: field('sku', 'SKU', sku, setSku, { maxLength: 64 }),
    // A native select: one element per row keeps a long matrix light, and it is what a phone shows best.
    image: (
      <TextField
        select
        size="small"
        fullWidth={small}
        label={small ? 'Image' : undefined}
        value={imageId}
        onChange={(event) => setImageId(event.target.value)}
        error={failure?.field === 'imageId'}
        sx={small ? undefined : { width: 170 }}
        slotProps={{
          select: { native: true },
          htmlInput: {
            'aria-label': `Image of ${title}`,
            'aria-invalid': failure?.field === 'imageId' ? true : undefined,
            'aria-describedby': failure ? errorId : undefined,
          },
        }}
      >
        <option value="">The product's</option>
        {images.map((image, index) => (
          <option key={image.id} value={String(image.id)}>
            {`Image ${index + 1}${image.alt ? `: ${image.alt.slice(0, 30)}` : ''}`}
          </option>
        ))}
      </TextField>
    ),
  }
  const actions = (
    <Box sx={{ display: 'flex', gap: 1 }}>
      <Button size="small" variant={dirty ? 'contained' : 'outlined'} disabled={!dirty || sending} onClick={() => void save()} aria-label={`Save ${title}`}>
        Save
      </Button>
      <Button size="small" color="error" disabled={sending} onClick={() => setConfirming(true)} aria-label={`Delete ${title}`}>
        Delete
      </Button>
      <Confirm
        isOpen={confirming}
        title={`Delete the variant ${title}?`}
        content="Its cart lines go with it; orders keep theirs."
        onConfirm={() => void remove()}
        onClose={() => setConfirming(false)}
      />
    </Box>
  )
  const error = failure && (
    <Typography role="alert" id={errorId} color="error" variant="body2">
      {failure.message}
    </Typography>
  )

  if (small) {
    return (
      <Box component="li" aria-label={title} sx={{ borderBottom: '1px solid #ddd', py: 1.5 }}>
        <Typography variant="subtitle2" gutterBottom>
          {title}
        </Typography>
        <Stack spacing={1}>
          {inputs.price}
          {inputs.stock}
          {inputs.sku}
          {inputs.image}
          {error}
          {actions}
        </Stack>
      </Box>
    )
  }
  return (
    <>
      <TableRow aria-label={title}>
        <TableCell component="th" scope="row">
          {title}
        </TableCell>
        <TableCell>{inputs.price}</TableCell>
        <TableCell>{inputs.stock}</TableCell>
        <TableCell>{inputs.sku}</TableCell>
        <TableCell>{inputs.image}</TableCell>
        <TableCell>{actions}</TableCell>
      </TableRow>
      {error && (
        <TableRow>
          <TableCell colSpan={6} sx={{ borderTop: 'none' }}>
            {error}
          </TableCell>
        </TableRow>
      )}
    </>
  )
})
