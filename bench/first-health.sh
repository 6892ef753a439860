#!/usr/bin/env bash
# Time from launch to the first answer of /health, for hyperfine (fresh SQLite database each time):
#   hyperfine --warmup 2 'bash bench/first-health.sh'                          # npm start
#   hyperfine --warmup 2 'START="node scripts/start.mjs" bash bench/first-health.sh'
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
port=${PORT:-3917}
PORT=$port DATA_DIR=$dir LOG_LEVEL=warn setsid ${START:-npm start --silent} >/dev/null 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.005; done
kill -- -"$pid"
wait "$pid" 2>/dev/null || true
rm -rf "$dir"
