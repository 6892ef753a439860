import { useCallback, useEffect, useId, useRef, useState, type ChangeEvent, type DragEvent } from 'react'
import { Confirm, useNotify, useRecordContext } from 'react-admin'
import { Alert, Box, Button, Card, CardContent, TextField, Typography } from '@mui/material'
import { api } from '../api/client'
import { addImages, deleteImage, moved, reorderImages, updateImageAlt, UPLOAD_MAX, type ProductImage } from '../api/images'
import type { FullProduct } from '../api/products'
import { useCall } from './variants'

/** The type of the drag that moves one of the images (a drag of files from the computer has `Files`). */
const IMAGE_DRAG = 'application/x-shop-image-id'
const ACCEPT = 'image/jpeg,image/png,image/webp,image/gif,.jpg,.jpeg,.png,.webp,.gif'

/**
 * A product's images, on its edit page: several uploaded at once (picked or dropped, one request), each with its alt
 * text, deleted after confirmation, and put in order by drag and drop or with Move up / Move down (one PUT of the
 * whole order, whose answer is shown). A refusal is shown beside what it is about.
 */
export function ImagesEditor() {
  const record = useRecordContext<FullProduct>()
  if (!record?.images) return null
  // Read again (the form above saved), the editor starts over from the product as it now is.
  return <Images key={`${record.id}:${record.updatedAt}`} productId={record.id} initial={record.images} />
}

function Images({ productId, initial }: { productId: number; initial: ProductImage[] }) {
  const call = useCall()
  const notify = useNotify()
  const [images, setImages] = useState<ProductImage[]>(initial)
  const [uploadError, setUploadError] = useState<string | null>(null)
  const [orderError, setOrderError] = useState<string | null>(null)
  const [errors, setErrors] = useState<Record<number, string>>({})
  const [busy, setBusy] = useState(false)
  const [said, setSaid] = useState('')
  const [dropping, setDropping] = useState(false)
  const [dragged, setDragged] = useState<number | null>(null)
  /** The image whose Move button was pressed: once the new order shows, that button has the focus again. */
  const [focusAfter, setFocusAfter] = useState<{ id: number; direction: 'up' | 'down' } | null>(null)
  const inputRef = useRef<HTMLInputElement>(null)
  const inputId = useId()
  const helpId = useId()
  const uploadErrorId = useId()

  const upload = async (files: File[]) => {
    if (files.length === 0) return
    setBusy(true)
    setSaid(`Uploading ${files.length} ${files.length === 1 ? 'image' : 'images'}…`)
    const result = await call(() => addImages(api, productId, files))
    setBusy(false)
    if (inputRef.current) inputRef.current.value = ''
    if (!result.ok) {
      setSaid('')
      return setUploadError(result.failure.message)
    }
    setUploadError(null)
    setImages(result.value)
    setSaid(`${files.length} ${files.length === 1 ? 'image' : 'images'} added`)
  }

  const reorder = async (ids: number[], focusId?: number, direction?: 'up' | 'down') => {
    if (ids.join() === images.map((image) => image.id).join()) return
    setBusy(true)
    const result = await call(() => reorderImages(api, productId, ids))
    setBusy(false)
    // Refused or not, the button pressed gets the focus back (it was disabled during the call).
    if (focusId !== undefined) setFocusAfter({ id: focusId, direction: direction ?? 'up' })
    if (!result.ok) return setOrderError(result.failure.message)
    setOrderError(null)
    setImages(result.value)
    if (focusId !== undefined) {
      const place = result.value.findIndex((image) => image.id === focusId)
      setSaid(`Image moved to position ${place + 1} of ${result.value.length}`)
    } else setSaid('New order saved')
  }

  useEffect(() => {
    if (!focusAfter || busy) return
    // The button pressed keeps the focus; at the top or bottom, where it is disabled, the other one takes it.
    const button = (direction: 'up' | 'down') => document.getElementById(`image-${focusAfter.id}-${direction}`) as HTMLButtonElement | null
    const same = button(focusAfter.direction)
    ;(same && !same.disabled ? same : button(focusAfter.direction === 'up' ? 'down' : 'up'))?.focus()
    setFocusAfter(null)
  }, [focusAfter, busy, images])

  const remove = async (image: ProductImage) => {
    setBusy(true)
    const result = await call(() => deleteImage(api, productId, image.id))
    setBusy(false)
    if (!result.ok) return setErrors((all) => ({ ...all, [image.id]: result.failure.message }))
    setErrors(({ [image.id]: _, ...rest }) => rest)
    // The others close up, as the API does.
    setImages((all) => all.filter((other) => other.id !== image.id).map((other, position) => ({ ...other, position })))
    notify('Image deleted', { type: 'success' })
  }

  const onSaved = useCallback((saved: ProductImage) => setImages((all) => all.map((image) => (image.id === saved.id ? saved : image))), [])
  const ids = images.map((image) => image.id)

  const isFiles = (event: DragEvent) => event.dataTransfer.types.includes('Files')
  const dropFiles = (event: DragEvent) => {
    if (!isFiles(event)) return
    event.preventDefault()
    setDropping(false)
    void upload(Array.from(event.dataTransfer.files))
  }

  return (
    <Card sx={{ mt: 2 }} component="section" aria-labelledby="images-heading">
      <CardContent>
        <Typography component="h2" variant="h6" id="images-heading" gutterBottom>
          Images ({images.length})
        </Typography>
        <Box
          onDragOver={(event) => {
            if (!isFiles(event)) return
            event.preventDefault()
            setDropping(true)
          }}
          onDragLeave={() => setDropping(false)}
          onDrop={dropFiles}
          sx={{ border: '2px dashed', borderColor: dropping ? 'primary.main' : '#767676', borderRadius: 1, p: 2, mb: 2 }}
        >
          <label htmlFor={inputId}>
            <Typography component="span" variant="subtitle2" sx={{ display: 'block', mb: 1 }}>
              Add images
            </Typography>
          </label>
          <input
            ref={inputRef}
            id={inputId}
            type="file"
            multiple
            accept={ACCEPT}
            disabled={busy}
            aria-describedby={uploadError ? `${uploadErrorId} ${helpId}` : helpId}
            aria-invalid={uploadError ? true : undefined}
            onChange={(event: ChangeEvent<HTMLInputElement>) => void upload(Array.from(event.target.files ?? []))}
            style={{ maxWidth: '100%' }}
          />
          <Typography id={helpId} variant="body2" sx={{ mt: 1 }}>
            Up to {UPLOAD_MAX} at once (JPEG, PNG, WebP or GIF, 5 MB each), picked here or dropped on this box; they are added after the others. The first image
            is the main one.
          </Typography>
          {uploadError && (
            <Alert severity="error" role="alert" id={uploadErrorId} sx={{ mt: 1 }}>
              {uploadError}
            </Alert>
          )}
        </Box>
        <div role="status" aria-live="polite" style={{ position: 'absolute', width: 1, height: 1, overflow: 'hidden', clip: 'rect(0 0 0 0)' }}>
          {said}
        </div>
        {orderError && (
          <Alert severity="error" role="alert" sx={{ mb: 2 }}>
            {orderError}
          </Alert>
        )}
        {images.length === 0 ? (
          <Typography variant="body2">No images yet: a product without images can only be a draft.</Typography>
        ) : (
          <Box component="ol" aria-label="Images" sx={{ listStyle: 'none', p: 0, m: 0 }}>
            {images.map((image, index) => (
              <ImageRow
                key={image.id}
                productId={productId}
                image={image}
                index={index}
                count={images.length}
                busy={busy}
                error={errors[image.id]}
                dragging={dragged === image.id}
                onSaved={onSaved}
                onMove={(to, direction) => void reorder(moved(ids, image.id, to), image.id, direction)}
                onDelete={() => void remove(image)}
                onDragStart={(event) => {
                  event.dataTransfer.setData(IMAGE_DRAG, String(image.id))
                  event.dataTransfer.effectAllowed = 'move'
                  setDragged(image.id)
                }}
                onDragEnd={() => setDragged(null)}
                onDrop={(event) => {
                  const id = Number(event.dataTransfer.getData(IMAGE_DRAG))
                  if (!id) return dropFiles(event)
                  event.preventDefault()
                  setDragged(null)
                  void reorder(moved(ids, id, index))
                }}
              />
            ))}
          </Box>
        )}
      </CardContent>
    </Card>
  )
}

interface RowProps {
  productId: number
  image: ProductImage
  index: number
  count: number
  busy: boolean
  error: string | undefined
  dragging: boolean
  onSaved: (image: ProductImage) => void
  onMove: (to: number, direction: 'up' | 'down') => void
  onDelete: () => void
  onDragStart: (event: DragEvent) => void
  onDragEnd: () => void
  onDrop: (event: DragEvent) => void
}

/** One image: its thumbnail, its alt text (saved when the field is left, or with Enter), its moves and its deletion. */
function ImageRow({ productId, image, index, count, busy, error, dragging, onSaved, onMove, onDelete, onDragStart, onDragEnd, onDrop }: RowProps) {
  const call = useCall()
  const [alt, setAlt] = useState(image.alt)
  const [altError, setAltError] = useState<string | null>(null)
  const [saving, setSaving] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const name = `image ${index + 1}`
  const errorId = `image-${image.id}-error`

  const saveAlt = async () => {
    if (alt === image.alt) return
    setSaving(true)
    const result = await call(() => updateImageAlt(api, productId, image.id, alt))
    setSaving(false)
    if (!result.ok) return setAltError(result.failure.message)
    setAltError(null)
    onSaved(result.value)
  }

  return (
    <Box
      component="li"
      aria-label={`Image ${index + 1}${index === 0 ? ' (main image)' : ''}`}
      draggable
      onDragStart={onDragStart}
      onDragEnd={onDragEnd}
      onDragOver={(event: DragEvent) => event.preventDefault()}
      onDrop={onDrop}
      sx={{
        display: 'flex',
        flexWrap: 'wrap',
        gap: 2,
        alignItems: 'flex-start',
        borderBottom: '1px solid #ddd',
        py: 1.5,
        opacity: dragging ? 0.5 : 1,
        cursor: 'grab',
      }}
    >
      <Box sx={{ width: 96, flexShrink: 0 }}>
        <img
          src={image.url}
          alt={image.alt}
          width={96}
          height={96}
          style={{ objectFit: 'cover', borderRadius: 4, background: '#eee', display: 'block' }}
          draggable={false}
        />
        <Typography variant="caption" component="p">
          {index + 1} of {count}
          {index === 0 ? ', main' : ''}
        </Typography>
      </Box>
      <Box sx={{ flex: '1 1 220px', minWidth: 0 }}>
        <TextField
          size="small"
          fullWidth
          label={`Alt text of ${name}`}
          value={alt}
          onChange={(event) => setAlt(event.target.value)}
          onBlur={() => void saveAlt()}
          onKeyDown={(event) => {
            if (event.key === 'Enter') {
              event.preventDefault()
              void saveAlt()
            }
          }}
          error={altError !== null}
          helperText={
            altError ??
            (saving
              ? 'Saving…'
              : alt === image.alt
                ? 'Describes the image for those who cannot see it; saved when you leave the field.'
                : 'Not saved yet: leave the field or press Enter.')
          }
          slotProps={{ htmlInput: { maxLength: 500 }, formHelperText: altError ? { role: 'alert' } : {} }}
        />
        <Box sx={{ display: 'flex', flexWrap: 'wrap', gap: 1, mt: 1 }}>
          <Button
            size="small"
            variant="outlined"
            id={`image-${image.id}-up`}
            disabled={busy || index === 0}
            onClick={() => onMove(index - 1, 'up')}
            aria-label={`Move ${name} up`}
          >
            Move up
          </Button>
          <Button
            size="small"
            variant="outlined"
            id={`image-${image.id}-down`}
            disabled={busy || index === count - 1}
            onClick={() => onMove(index + 1, 'down')}
            aria-label={`Move ${name} down`}
          >
            Move down
          </Button>
          <Button
            size="small"
            color="error"
            disabled={busy}
            onClick={() => setConfirming(true)}
            aria-label={`Delete ${name}`}
            aria-describedby={error ? errorId : undefined}
          >
            Delete
          </Button>
          <Confirm
            isOpen={confirming}
            title={`Delete ${name}?`}
            content="The image and its file are removed; variants showing it show none."
            onConfirm={() => {
              setConfirming(false)
              onDelete()
            }}
            onClose={() => setConfirming(false)}
          />
        </Box>
        {error && (
          <Alert severity="error" role="alert" id={errorId} sx={{ mt: 1 }}>
            {error}
          </Alert>
        )}
      </Box>
    </Box>
  )
}
