/** An expected failure with the status and message the API documents for it (docs/api.md). */
export class AppError extends Error {
  constructor(
    readonly statusCode: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503,
    message: string,
    // The underlying failure (a provider's error), for the log; never shown.
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = 'AppError'
  }
}

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
  // Addresses, shipping and checkout.
  addressNotFound: 'Dirección no encontrada',
  addressDeleted: 'Dirección eliminada',
  invalidCountry: 'country must be a valid ISO 3166-1 alpha-2 code',
  shippingMethodNotFound: 'Método de envío no encontrado',
  shippingMethodDeleted: 'Método de envío eliminado',
  shippingAddressRequired: 'La dirección de envío es obligatoria',
  shippingMethodRequired: 'El método de envío es obligatorio',
  // Followed by the country code (orders.service.ts): a string, so docs/api.md is checked for it as it stands.
  shippingUnavailable: 'El método de envío no está disponible para',
  addressIdAndInline: 'shippingAddressId and shippingAddress must not both be given',
  // Catalog and image hosting.
  categoryNotFound: 'Categoría no encontrada',
  categoryExists: 'La categoría ya existe',
  categoryInUse: 'La categoría tiene productos asociados',
  categoryMissing: 'La categoría no existe',
  imageRequired: "La imagen del producto es obligatoria (campo 'image')",
  invalidImageType: (mime: string) => `Invalid file type: ${mime}. Allowed types: image/jpeg, image/jpg, image/png, image/webp, image/gif`,
  invalidImageExtension: (ext: string) => `Invalid file extension: ${ext}. Allowed extensions: .jpg, .jpeg, .png, .webp, .gif`,
  imageTooLarge: 'El archivo es demasiado grande. Tamaño máximo: 5MB',
  imageUploadFailed: 'Error al subir la imagen al servicio de alojamiento',
  imageNotFound: 'Imagen no encontrada',
  singleImageFile: "Only one file may be sent, in the field 'image'",
  strayFileField: (field: string) => `Unexpected file field '${field}'; the image goes in the field 'image'`,
  malformedMultipart: 'El cuerpo multipart no es válido',
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
