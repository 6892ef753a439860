# syntax=docker/dockerfile:1
# shop-api: `docker build -t shop-api .`, then `docker compose up` (compose.yaml) or `docker run -p 3000:3000 …`.
# Two stages: the build stage has the compilers and the development packages; the runtime stage has only the
# compiled JavaScript (dist/), the production packages and, when the project has one, the built admin dashboard.

# ---- build ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 downloads a prebuilt binary for this platform; the compilers are only the fallback when none fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
# The packages first, so that a change in the sources does not reinstall them. No scripts yet: a project
# postinstall may build the dashboard, whose sources are not copied yet.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# Now the packages' own install scripts (better-sqlite3's native binding), then the compiled service.
RUN npm rebuild --no-audit --no-fund \
  && npm run build \
  && npm run --if-present build:admin \
  && mkdir -p admin/dist \
  && npm prune --omit=dev --no-audit --no-fund
# Assumption: the admin dashboard, when the project has one, is built by `build:admin` (or a postinstall) into
# admin/dist/ and served from there. The folder is created empty above when there is none, so that the COPY
# below works either way.

# ---- runtime ----
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# `npm run migrate`, `create-admin`, `seed` and `cli` (docker exec / docker compose run) go through scripts/cli.mjs.
COPY --from=build /app/scripts ./scripts
COPY --from=build /app/admin/dist ./admin/dist
# DATA_DIR: the SQLite database (when DATABASE_URL is not PostgreSQL), local uploads, the upload spool.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
# The image's own `node` user (uid 1000): the service never runs as root.
USER node
EXPOSE 3000
# No curl in the slim image: Node's own fetch, bounded to 2 s.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health',{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The service drains in-flight requests on SIGTERM (10 s at most): give `docker stop` more than that.
STOPSIGNAL SIGTERM
# What `npm run start:prod` runs, without npm in between: node is the process that gets the signal.
CMD ["node", "--enable-source-maps", "--max-semi-space-size=32", "dist/server.js"]
