# syntax=docker/dockerfile:1
# shop-api: `docker build -t shop-api .`, then `docker compose up` (compose.yaml) or `docker run -p 3000:3000 …`.
# Stages: `build` compiles the service (and the admin dashboard when the project has one) with every package;
# `prod-deps` installs only the service's production packages; `runtime` holds the compiled JavaScript (dist/),
# those packages and the built dashboard, nothing else.

# ---- compilers, shared by the two install stages ----
FROM node:22-bookworm-slim AS toolchain
WORKDIR /app
# better-sqlite3 downloads a prebuilt binary for this platform; the compilers are only the fallback when none fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*

# ---- build ----
FROM toolchain AS build
# Everything first: with npm workspaces (admin/), `npm ci` needs admin/package.json too.
COPY . .
# No scripts during the install (a project postinstall may build the dashboard: done explicitly below), then the
# packages' own install scripts (better-sqlite3's binding), the service, and the dashboard when there is one.
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund \
  && npm rebuild \
  && npm run build \
  && npm run --if-present build:admin \
  && mkdir -p admin/dist
# Assumption: the admin dashboard, when the project has one, is built by `build:admin` (or the postinstall) into
# admin/dist/ and served from there (dist/ and admin/dist/ side by side under /app). The folder is created empty
# when there is none, so that the COPY in the runtime stage works either way (the service then answers without it).

# ---- production packages only ----
FROM toolchain AS prod-deps
COPY . .
# --workspaces=false: the dashboard's packages (React, Vite, …) are for building it, not for running the service.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --workspaces=false --ignore-scripts --no-audit --no-fund \
  && npm rebuild better-sqlite3

# ---- runtime ----
FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=prod-deps /app/package.json /app/package-lock.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# `npm run migrate`, `create-admin`, `seed` and `cli` (docker compose run --rm app npm run …) go through scripts/cli.mjs.
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
# The service drains in-flight requests on SIGTERM (10 s at most): give `docker stop` more than that (-t 15).
STOPSIGNAL SIGTERM
# What `npm run start:prod` runs, without npm in between: node is the process that gets the signal.
CMD ["node", "--enable-source-maps", "--max-semi-space-size=32", "dist/server.js"]
