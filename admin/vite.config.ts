import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

// The service serves the build at /admin (assets under /admin/assets/), and the API at the same origin.
// `npm run dev` here proxies the API to a service on localhost:3000 (SHOP_API_URL to change it).
const api = process.env.SHOP_API_URL ?? 'http://localhost:3000'
const apiPrefixes = ['/auth', '/products', '/categories', '/orders', '/uploads', '/admin/api', '/webhooks', '/shipping-methods', '/health']

export default defineConfig({
  base: '/admin/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1500, reportCompressedSize: true },
  server: { proxy: Object.fromEntries(apiPrefixes.map((prefix) => [prefix, { target: api, changeOrigin: true }])) },
})
