// The configuration lives in src/config/ (index.ts assembles it from one module per section); this file keeps
// the import path the rest of the code uses, `./config.js`.
export * from './config/index.js'
