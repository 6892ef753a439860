/** The API's messages, in one place so routes and tests share the wording. */
export const messages = {
  internal: 'Error interno del servidor',
  noUser: 'Unauthorized - No user found',
  invalidToken: 'Token inválido o expirado',
  noRole: 'Forbidden - No role assigned',
  requiresRoles: (roles: readonly string[]) => `Forbidden - Requires one of the following roles: ${roles.join(', ')}`,
  emailTaken: 'El email ya está en uso',
  badCredentials: 'Credenciales inválidas',
  userNotFound: 'Usuario no encontrado',
  ownRole: 'No puedes cambiar tu propio rol',
  ownAccount: 'No puedes eliminar tu propia cuenta',
  invalidEmail: 'email must be a valid email',
  passwordTooShort: 'La contraseña debe tener al menos 6 caracteres',
  badRole: "El rol debe ser 'customer' o 'admin'",
  tooManyAttempts: 'Demasiados intentos. Intenta de nuevo en 15 minutos.',
  // Sessions and password reset.
  loggedOut: 'Sesión cerrada',
  loggedOutEverywhere: 'Todas las sesiones cerradas',
  resetRequested: 'Si el email está registrado, recibirás un enlace para restablecer la contraseña',
  passwordUpdated: 'Contraseña actualizada',
  invalidResetLink: 'Enlace inválido o caducado',
  routeNotFound: 'Ruta no encontrada',
  malformedJson: 'El cuerpo de la petición no es JSON válido',
  bodyTooLarge: 'El cuerpo de la petición es demasiado grande',
  unsupportedMediaType: 'Tipo de contenido no soportado',
  badUrl: 'La URL no es válida',
  urlTooLong: 'La URL es demasiado larga',
  // Worded like the other validation rules (shared/validation.ts).
  controlCharacters: (field: string) => `${field} must not contain control characters`,
  notReady: 'La base de datos no responde',
  // Answered by the HTTP server itself, before any route (plugins/errors.ts answerClientError).
  malformedRequest: 'La petición HTTP no es válida',
  headersTooLarge: 'Las cabeceras de la petición son demasiado grandes',
  requestTimeout: 'La petición tardó demasiado en llegar',
  // Cart and orders.
  productNotFound: 'Producto no encontrado',
  insufficientStock: 'Stock insuficiente',
  cartItemNotFound: 'Item del carrito no encontrado',
  cartEmpty: 'El carrito está vacío',
  insufficientStockFor: (productName: string) => `Stock insuficiente para ${productName}`,
  amountTooLarge: 'El importe supera el máximo permitido (9999999999999.99)',
  orderNotFound: 'Orden no encontrada',
  transitionNotAllowed: (from: string, to: string) => `Transición de estado no permitida: ${from} -> ${to}`,
  cartItemRemoved: 'Item eliminado del carrito',
  cartCleared: 'Carrito vaciado',
  // Guest orders: an order token (the link to a guest's order) that is bad, expired or another order's.
  invalidOrderLink: 'Enlace inválido o caducado',
  orderLookupRequested: 'Si los datos coinciden, te enviaremos un enlace a tu pedido',
  // Addresses, shipping and checkout.
  addressNotFound: 'Dirección no encontrada',
  addressDeleted: 'Dirección eliminada',
  invalidCountry: 'country must be a valid ISO 3166-1 alpha-2 code',
  shippingMethodNotFound: 'Método de envío no encontrado',
  shippingMethodDeleted: 'Método de envío eliminado',
  shippingAddressRequired: 'La dirección de envío es obligatoria',
  shippingMethodRequired: 'El método de envío es obligatorio',
  shippingUnavailable: (country: string) => `El método de envío no está disponible para ${country}`,
  addressIdAndInline: 'shippingAddressId and shippingAddress must not both be given',
  // Catalog and image hosting.
  categoryNotFound: 'Categoría no encontrada',
  categoryExists: 'La categoría ya existe',
  categoryInUse: 'La categoría tiene productos asociados',
  categoryMissing: 'La categoría no existe',
  // Slugs (products and categories) and the category tree.
  slugInvalid: 'slug must be 1 to 100 lowercase letters, digits and hyphens, with at least one letter',
  slugReserved: 'slug is reserved',
  parentCategoryMissing: 'La categoría padre no existe',
  categoryCycle: 'Una categoría no puede estar dentro de sí misma ni de sus subcategorías',
  categoryTooDeep: 'La categoría supera la profundidad máxima (5 niveles)',
  categoryHasChildren: 'La categoría tiene subcategorías',
  imageRequired: "La imagen del producto es obligatoria (campo 'image')",
  invalidImageType: (mime: string) => `Invalid file type: ${mime}. Allowed types: image/jpeg, image/jpg, image/png, image/webp, image/gif`,
  invalidImageExtension: (ext: string) => `Invalid file extension: ${ext}. Allowed extensions: .jpg, .jpeg, .png, .webp, .gif`,
  imageTooLarge: 'El archivo es demasiado grande. Tamaño máximo: 5MB',
  imageUploadFailed: 'Error al subir la imagen al servicio de alojamiento',
  imageNotFound: 'Imagen no encontrada',
  singleImageFile: "Only one file may be sent, in the field 'image'",
  strayFileField: (field: string) => `Unexpected file field '${field}'; the image goes in the field 'image'`,
  malformedMultipart: 'El cuerpo multipart no es válido',
  severalVariantsPriceStock: 'El producto tiene varias variantes: cambia precio y stock en cada variante',
  variantRequired: 'El producto tiene varias variantes: indica variantId',
  variantNotFound: 'Variante no encontrada',
  slugTaken: 'El slug ya está en uso',
  productUnavailable: (name: string) => `El producto ${name} no está disponible`,
  imagelessProduct: 'Un producto sin imágenes solo puede estar en borrador',
  // Options and variants (src/modules/catalog/variants.service.ts).
  optionNotFound: 'Opción no encontrada',
  tooManyOptions: (max: number) => `Un producto admite como máximo ${max} opciones`,
  optionExists: (name: string) => `La opción ya existe: ${name}`,
  optionRemovalDuplicates: 'Eliminar la opción dejaría variantes repetidas',
  optionValueInUse: (variants: number) => `El valor está en uso por ${variants} variantes`,
  optionValueExists: (value: string) => `El valor ya existe: ${value}`,
  optionsIncomplete: 'options must name every option of the product',
  tooManyVariants: (max: number) => `Un producto admite como máximo ${max} variantes`,
  skuTaken: (sku: string) => `El SKU ya existe: ${sku}`,
  variantExists: (title: string) => `Ya existe una variante con esas opciones: ${title}`,
  imageOfAnotherProduct: 'La imagen no pertenece al producto',
  lastVariant: 'Un producto debe tener al menos una variante',
  variantDeleted: 'Variante eliminada',
  // A product's images (src/modules/catalog/product-images.service.ts).
  tooManyImages: (max: number) => `Un producto admite como máximo ${max} imágenes`,
  tooManyImageFiles: (max: number) => `images must contain no more than ${max} elements`,
  strayImagesField: (field: string) => `Unexpected file field '${field}'; the images go in the field 'images'`,
  imageOrderInvalid: 'imageIds must list every image of the product exactly once',
  imageDeleted: 'Imagen eliminada',
  // Payments.
  orderNotPayable: 'La orden no está pendiente de pago',
  invalidWebhookSignature: 'Firma de webhook inválida',
  refundFailed: 'No se pudo reembolsar el pago',
  paymentProviderUnavailable: 'El proveedor de pagos no responde',
  paidByCard: 'La orden ya tiene un pago con tarjeta cobrado o en curso',
  refundInProgress: 'La orden tiene un reembolso en curso',
  // Webhooks (src/modules/webhooks).
  webhookNotFound: 'Webhook no encontrado',
  webhookDeleted: 'Webhook eliminado',
  webhookDeliveryNotFound: 'Entrega no encontrada',
  webhookInactive: 'El webhook está desactivado',
  webhookUrlNotAllowed: 'La URL del webhook no está permitida',
  webhookUrlInvalid: 'url must be an absolute http or https URL',
  webhookUrlCredentials: 'url must not contain a user name or password',
  webhookHostNotFound: 'El host de la URL del webhook no existe',
  webhookDnsUnavailable: 'No se pudo resolver el host de la URL del webhook',
  // Admin dashboard (plugins/admin-ui.ts).
  adminNotBuilt: 'El panel de administración no está compilado: ejecuta npm run build:admin',
} as const

/**
 * What a program reads of an error (docs/api.md, "Error codes"): each code, stable once published, with the status it
 * is answered with and a short English title, the same for every occurrence. Problem details (RFC 9457, asked for with
 * `Accept: application/problem+json`) carry them as `code`, `status` and `title`, the message as `detail`.
 * `client_error` is the one code without a status of its own: a 4xx that a framework part raised and no row names.
 */
export const errorCodes = {
  validation_failed: { status: 422, title: 'Validation failed' },
  unauthorized: { status: 401, title: 'Authentication required' },
  invalid_token: { status: 401, title: 'Invalid or expired token' },
  invalid_credentials: { status: 401, title: 'Invalid credentials' },
  forbidden: { status: 403, title: 'Forbidden' },
  cannot_change_own_role: { status: 403, title: 'Cannot change own role' },
  cannot_delete_own_account: { status: 409, title: 'Cannot delete own account' },
  email_taken: { status: 409, title: 'E-mail already in use' },
  user_not_found: { status: 404, title: 'User not found' },
  rate_limited: { status: 429, title: 'Too many attempts' },
  invalid_reset_link: { status: 400, title: 'Invalid or expired reset link' },
  invalid_order_link: { status: 401, title: 'Invalid or expired order link' },
  route_not_found: { status: 404, title: 'Route not found' },
  malformed_json: { status: 400, title: 'Malformed JSON body' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  malformed_url: { status: 400, title: 'Malformed URL' },
  url_too_long: { status: 414, title: 'URL too long' },
  malformed_request: { status: 400, title: 'Malformed HTTP request' },
  headers_too_large: { status: 431, title: 'Request headers too large' },
  request_timeout: { status: 408, title: 'Request timeout' },
  database_unavailable: { status: 503, title: 'Database unavailable' },
  product_not_found: { status: 404, title: 'Product not found' },
  insufficient_stock: { status: 409, title: 'Insufficient stock' },
  cart_item_not_found: { status: 404, title: 'Cart item not found' },
  cart_empty: { status: 400, title: 'Cart is empty' },
  amount_too_large: { status: 409, title: 'Amount too large' },
  order_not_found: { status: 404, title: 'Order not found' },
  transition_not_allowed: { status: 409, title: 'Status transition not allowed' },
  address_not_found: { status: 404, title: 'Address not found' },
  shipping_method_not_found: { status: 404, title: 'Shipping method not found' },
  shipping_address_required: { status: 422, title: 'Shipping address required' },
  shipping_method_required: { status: 422, title: 'Shipping method required' },
  shipping_unavailable: { status: 422, title: 'Shipping method unavailable for the country' },
  category_not_found: { status: 404, title: 'Category not found' },
  category_exists: { status: 409, title: 'Category already exists' },
  category_in_use: { status: 409, title: 'Category in use' },
  unknown_category: { status: 422, title: 'Unknown category' },
  unknown_parent_category: { status: 422, title: 'Unknown parent category' },
  category_cycle: { status: 409, title: 'Category inside itself' },
  category_too_deep: { status: 409, title: 'Category tree too deep' },
  category_has_children: { status: 409, title: 'Category has subcategories' },
  image_required: { status: 400, title: 'Product image required' },
  // 500s because the original specification answers them so; they are the client's doing all the same.
  invalid_image_type: { status: 500, title: 'Image type not allowed' },
  invalid_image_extension: { status: 500, title: 'Image extension not allowed' },
  image_too_large: { status: 500, title: 'Image too large' },
  image_upload_failed: { status: 500, title: 'Image upload failed' },
  image_not_found: { status: 404, title: 'Image not found' },
  malformed_multipart: { status: 400, title: 'Malformed multipart body' },
  several_variants: { status: 422, title: 'The product has several variants' },
  variant_required: { status: 422, title: 'Variant required' },
  variant_not_found: { status: 404, title: 'Variant not found' },
  slug_taken: { status: 409, title: 'Slug already in use' },
  product_unavailable: { status: 409, title: 'Product not available' },
  product_without_images: { status: 409, title: 'A product without images can only be a draft' },
  option_not_found: { status: 404, title: 'Option not found' },
  too_many_options: { status: 409, title: 'Too many options' },
  option_exists: { status: 409, title: 'Option already exists' },
  option_removal_duplicates: { status: 409, title: 'Removing the option would duplicate variants' },
  option_value_in_use: { status: 409, title: 'Option value in use' },
  option_value_exists: { status: 409, title: 'Option value already exists' },
  too_many_variants: { status: 409, title: 'Too many variants' },
  too_many_images: { status: 409, title: 'Too many images' },
  sku_taken: { status: 409, title: 'SKU already in use' },
  variant_exists: { status: 409, title: 'Variant already exists' },
  image_of_another_product: { status: 422, title: 'Image of another product' },
  last_variant: { status: 409, title: 'Last variant' },
  order_not_payable: { status: 409, title: 'Order not payable' },
  invalid_webhook_signature: { status: 400, title: 'Invalid webhook signature' },
  refund_failed: { status: 502, title: 'Refund failed' },
  payment_provider_unavailable: { status: 502, title: 'Payment provider unavailable' },
  order_paid_by_card: { status: 409, title: 'Order paid by card' },
  refund_in_progress: { status: 409, title: 'Refund in progress' },
  webhook_not_found: { status: 404, title: 'Webhook not found' },
  webhook_delivery_not_found: { status: 404, title: 'Webhook delivery not found' },
  webhook_inactive: { status: 409, title: 'Webhook inactive' },
  webhook_dns_unavailable: { status: 503, title: 'Webhook host could not be resolved' },
  admin_not_built: { status: 503, title: 'Admin dashboard not built' },
  client_error: { status: null, title: 'Client error' },
  internal_error: { status: 500, title: 'Internal server error' },
} as const satisfies Record<string, { status: number | null; title: string }>

export type ErrorCode = keyof typeof errorCodes
type MessageKey = keyof typeof messages

/**
 * The code of every message answered as an error. Validation rules' messages are `validation_failed` (a
 * ValidationError names the field); the messages of a success have none (`successMessages`).
 */
export const messageCodes = {
  internal: 'internal_error',
  noUser: 'unauthorized',
  invalidToken: 'invalid_token',
  noRole: 'forbidden',
  requiresRoles: 'forbidden',
  emailTaken: 'email_taken',
  badCredentials: 'invalid_credentials',
  userNotFound: 'user_not_found',
  ownRole: 'cannot_change_own_role',
  ownAccount: 'cannot_delete_own_account',
  invalidEmail: 'validation_failed',
  passwordTooShort: 'validation_failed',
  badRole: 'validation_failed',
  tooManyAttempts: 'rate_limited',
  invalidResetLink: 'invalid_reset_link',
  routeNotFound: 'route_not_found',
  malformedJson: 'malformed_json',
  bodyTooLarge: 'payload_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  badUrl: 'malformed_url',
  urlTooLong: 'url_too_long',
  controlCharacters: 'validation_failed',
  notReady: 'database_unavailable',
  malformedRequest: 'malformed_request',
  headersTooLarge: 'headers_too_large',
  requestTimeout: 'request_timeout',
  productNotFound: 'product_not_found',
  insufficientStock: 'insufficient_stock',
  cartItemNotFound: 'cart_item_not_found',
  cartEmpty: 'cart_empty',
  insufficientStockFor: 'insufficient_stock',
  amountTooLarge: 'amount_too_large',
  orderNotFound: 'order_not_found',
  transitionNotAllowed: 'transition_not_allowed',
  invalidOrderLink: 'invalid_order_link',
  addressNotFound: 'address_not_found',
  invalidCountry: 'validation_failed',
  shippingMethodNotFound: 'shipping_method_not_found',
  shippingAddressRequired: 'shipping_address_required',
  shippingMethodRequired: 'shipping_method_required',
  shippingUnavailable: 'shipping_unavailable',
  addressIdAndInline: 'validation_failed',
  categoryNotFound: 'category_not_found',
  categoryExists: 'category_exists',
  categoryInUse: 'category_in_use',
  categoryMissing: 'unknown_category',
  slugInvalid: 'validation_failed',
  slugReserved: 'validation_failed',
  parentCategoryMissing: 'unknown_parent_category',
  categoryCycle: 'category_cycle',
  categoryTooDeep: 'category_too_deep',
  categoryHasChildren: 'category_has_children',
  imageRequired: 'image_required',
  invalidImageType: 'invalid_image_type',
  invalidImageExtension: 'invalid_image_extension',
  imageTooLarge: 'image_too_large',
  imageUploadFailed: 'image_upload_failed',
  imageNotFound: 'image_not_found',
  singleImageFile: 'validation_failed',
  strayFileField: 'validation_failed',
  severalVariantsPriceStock: 'several_variants',
  variantRequired: 'variant_required',
  variantNotFound: 'variant_not_found',
  slugTaken: 'slug_taken',
  productUnavailable: 'product_unavailable',
  imagelessProduct: 'product_without_images',
  optionNotFound: 'option_not_found',
  tooManyOptions: 'too_many_options',
  optionExists: 'option_exists',
  optionRemovalDuplicates: 'option_removal_duplicates',
  optionValueInUse: 'option_value_in_use',
  optionValueExists: 'option_value_exists',
  optionsIncomplete: 'validation_failed',
  tooManyVariants: 'too_many_variants',
  tooManyImages: 'too_many_images',
  tooManyImageFiles: 'validation_failed',
  strayImagesField: 'validation_failed',
  imageOrderInvalid: 'validation_failed',
  skuTaken: 'sku_taken',
  variantExists: 'variant_exists',
  imageOfAnotherProduct: 'image_of_another_product',
  lastVariant: 'last_variant',
  malformedMultipart: 'malformed_multipart',
  orderNotPayable: 'order_not_payable',
  invalidWebhookSignature: 'invalid_webhook_signature',
  refundFailed: 'refund_failed',
  paymentProviderUnavailable: 'payment_provider_unavailable',
  paidByCard: 'order_paid_by_card',
  refundInProgress: 'refund_in_progress',
  webhookNotFound: 'webhook_not_found',
  webhookDeliveryNotFound: 'webhook_delivery_not_found',
  webhookInactive: 'webhook_inactive',
  webhookUrlNotAllowed: 'validation_failed',
  webhookUrlInvalid: 'validation_failed',
  webhookUrlCredentials: 'validation_failed',
  webhookHostNotFound: 'validation_failed',
  webhookDnsUnavailable: 'webhook_dns_unavailable',
  adminNotBuilt: 'admin_not_built',
} as const satisfies { [K in MessageKey]?: ErrorCode }

/** The messages of a success (`{"message": "..."}`): they are no error and have no code. */
export const successMessages = [
  'loggedOut',
  'loggedOutEverywhere',
  'resetRequested',
  'passwordUpdated',
  'cartItemRemoved',
  'cartCleared',
  'orderLookupRequested',
  'addressDeleted',
  'shippingMethodDeleted',
  'webhookDeleted',
  'variantDeleted',
  'imageDeleted',
] as const satisfies readonly MessageKey[]

// A message that is neither an error with a code nor a success fails the build here: add it to one of the two lists.
type Unclassified = Exclude<MessageKey, keyof typeof messageCodes | (typeof successMessages)[number]>
const everyMessageClassified: [Unclassified] extends [never] ? true : Unclassified = true
void everyMessageClassified

/**
 * The input field an error is about, for the errors that always concern one (besides validation failures, whose
 * field the failed rule names): a form shows the message beside it.
 */
export const messageFields = {
  emailTaken: 'email',
  categoryExists: 'name',
  categoryMissing: 'categoryId',
  parentCategoryMissing: 'parentId',
  categoryCycle: 'parentId',
  categoryTooDeep: 'parentId',
  imageRequired: 'image',
  variantRequired: 'variantId',
  slugTaken: 'slug',
  imagelessProduct: 'status',
  optionExists: 'name',
  optionValueExists: 'value',
  skuTaken: 'sku',
  variantExists: 'options',
  imageOfAnotherProduct: 'imageId',
  invalidImageType: 'image',
  invalidImageExtension: 'image',
  imageTooLarge: 'image',
  shippingMethodRequired: 'shippingMethodId',
  shippingUnavailable: 'shippingMethodId',
} as const satisfies { [K in keyof typeof messageCodes]?: string }

type Codes = typeof messageCodes
/** The messages an AppError is made of: every error's, but a validation rule's (those are ValidationErrors). */
export type AppErrorKey = { [K in keyof Codes]: Codes[K] extends 'validation_failed' ? never : K }[keyof Codes]
type StatusOf<K extends AppErrorKey> = (typeof errorCodes)[Codes[K]]['status']
/** The arguments of a message built by a function (`transitionNotAllowed(from, to)`); none for a fixed one. */
type MessageArgs<K extends MessageKey> = (typeof messages)[K] extends (...args: infer A) => string ? A : []

/**
 * An expected failure, named by its message: `new AppError(404, 'productNotFound')`,
 * `new AppError(409, 'transitionNotAllowed', from, to)`. The status must be its code's (errorCodes), which the
 * compiler checks; the error carries its code, its message and, for some, the field it is about (messageFields).
 * A last argument `{ cause }` keeps the underlying failure (a provider's error) for the log; it is never shown.
 */
export class AppError<K extends AppErrorKey = AppErrorKey> extends Error {
  readonly code: ErrorCode
  readonly field: string | undefined

  constructor(
    readonly statusCode: StatusOf<K>,
    readonly key: K,
    ...rest: [...MessageArgs<K>, ErrorOptions?]
  ) {
    const template = messages[key] as string | ((...args: unknown[]) => string)
    const arity = typeof template === 'function' ? template.length : 0
    const message = typeof template === 'function' ? template(...rest.slice(0, arity)) : template
    super(message, rest[arity] as ErrorOptions | undefined)
    this.name = 'AppError'
    this.code = messageCodes[key]
    this.field = (messageFields as Partial<Record<AppErrorKey, string>>)[key]
  }
}
