#!/usr/bin/env bash
# Connection floods while good clients work: 2,000 connections that send a
# partial request head and stall, 2,000 keep-alive connections left idle
# after one request, and 200 connections a second opened and dropped
# mid-request, against Wharf with its default connection limit (1,024);
# meanwhile 8 good clients POST 1 KiB to `echo`. FLOOD_SECONDS (default 20).
# Prints what the good clients saw (rps, p50, p99, errors) beside a run
# without the flood.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${FLOOD_SECONDS:-20}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
http=127.0.0.1:9013
ulimit -n "$(ulimit -Hn)"
. scripts/lib/serve.sh
wharf_build
cp "$guests/echo.wasm" "$work/agents/echo.wasm"
wharf_start "listen \"$http\"
agents \"agents\"
audit #false"

quiet=$("$load" flood --http "$http" --stalled 0 --idle 0 --churn 0 --good 8 --seconds "$seconds")
flood=$("$load" flood --http "$http" --stalled 2000 --idle 2000 --churn 200 --good 8 --seconds "$seconds")
evicted=$(curl -fsS "http://$http/metrics" | awk '/^wharf_connections_evicted_total\{listener="http"\}/ { print $2 }')
python3 - "$quiet" "$flood" "${evicted:-0}" <<'PY'
import json, sys
quiet, flood, evicted = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
print("| good clients (8) | rps | p50 | p99 | errors |")
print("|---|---|---|---|---|")
for name, r in (("no flood", quiet), (f"flood: {flood['stalled_opened']} stalled, {flood['idle_opened']} idle, {flood['churned']} dropped mid-request", flood)):
    g = r["good"]
    print(f"| {name} | {g['rps']:,.0f} | {g['p50_us']/1000:.2f} ms | {g['p99_us']/1000:.2f} ms | {g['errors']} of {g['requests']} |")
print(f"\nidle or stalled connections closed to make room: {evicted}")
PY
