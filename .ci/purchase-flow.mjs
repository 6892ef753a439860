// The purchase flow against a running service, with nothing but the Node that runs it (fetch, FormData):
// an admin puts a product with an image on sale, a customer registers, logs in, fills the cart and orders,
// the admin ships the order, and the stock went down. Exits non-zero on the first unexpected answer.
//   node .ci/purchase-flow.mjs http://127.0.0.1:3000 admin@shop.test admin-password
import { deflateSync } from 'node:zlib'

const [base, adminEmail, adminPassword] = process.argv.slice(2)

async function call(method, path, { token, json, form, expect }) {
  const headers = token ? { authorization: `Bearer ${token}` } : {}
  const body = json ? JSON.stringify(json) : form
  if (json) headers['content-type'] = 'application/json'
  const response = await fetch(base + path, { method, headers, body })
  const text = await response.text()
  if (response.status !== expect) throw new Error(`${method} ${path}: ${response.status} ${text}, expected ${expect}`)
  return text ? JSON.parse(text) : undefined
}

/** A valid 1×1 PNG, built here (signature, IHDR, IDAT, IEND with their CRCs). */
function png() {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    return c >>> 0
  })
  const crc = (bytes) => {
    let c = 0xffffffff
    for (const byte of bytes) c = table[(c ^ byte) & 0xff] ^ (c >>> 8)
    return (c ^ 0xffffffff) >>> 0
  }
  const chunk = (type, data) => {
    const out = Buffer.alloc(12 + data.length)
    out.writeUInt32BE(data.length, 0)
    out.write(type, 4, 'ascii')
    data.copy(out, 8)
    out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length)
    return out
  }
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0])
  const idat = deflateSync(Buffer.from([0, 255, 0, 0]))
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))])
}

const admin = (await call('POST', '/auth/login', { json: { email: adminEmail, password: adminPassword }, expect: 200 })).token
const form = new FormData()
form.set('name', 'Desk lamp')
form.set('price', '19.99')
form.set('stock', '5')
form.set('image', new Blob([png()], { type: 'image/png' }), 'lamp.png')
const product = await call('POST', '/products', { token: admin, form, expect: 201 })
const image = await fetch(product.imageUrl)
if (image.status !== 200) throw new Error(`GET ${product.imageUrl}: ${image.status}`)

await call('POST', '/auth/register', { json: { name: 'Ana', email: 'ana@shop.test', password: 'secret123' }, expect: 201 })
const customer = (await call('POST', '/auth/login', { json: { email: 'ana@shop.test', password: 'secret123' }, expect: 200 })).token
await call('POST', '/cart/add', { token: customer, json: { productId: product.id, quantity: 2 }, expect: 201 })
const order = await call('POST', '/orders', { token: customer, expect: 201 })
if (order.total !== 39.98 || order.status !== 'pending') throw new Error(`unexpected order ${JSON.stringify(order)}`)
await call('PATCH', `/orders/${order.id}/status`, { token: admin, json: { status: 'paid' }, expect: 200 })
const shipped = await call('PATCH', `/orders/${order.id}/status`, { token: admin, json: { status: 'shipped' }, expect: 200 })
if (shipped.status !== 'shipped') throw new Error(`unexpected order ${JSON.stringify(shipped)}`)
const after = await call('GET', `/products/${product.id}`, { expect: 200 })
if (after.stock !== 3) throw new Error(`stock ${after.stock}, expected 3`)
console.log(`purchase flow on Node ${process.versions.node}: product ${product.id}, order ${order.id} shipped, stock 5 -> 3`)
