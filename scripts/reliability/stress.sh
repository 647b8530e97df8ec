#!/usr/bin/env bash
# Stress to the breaking point: steps the number of connections (10, 50,
# 100, 500, 1,000; STRESS_STEPS overrides) for HTTP and for the binary
# transport (one request in flight per connection), each step for
# LOAD_SECONDS (default 10) against the `echo` agent with its default
# limits (concurrency 256: past it, requests are shed with 503, which count
# as errors here). Prints the curve as a Markdown table: rps, p50, p95,
# p99, error rate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${LOAD_SECONDS:-10}"
steps="${STRESS_STEPS:-10 50 100 500 1000}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
http=127.0.0.1:9012
. scripts/lib/serve.sh
wharf_build
cp "$guests/echo.wasm" "$work/agents/echo.wasm"
wharf_start "listen \"$http\"
agents \"agents\"
audit #false
server { connections 4096 }
binary { unix \"$work/w.sock\"; connections 4096 }"

echo "| transport | connections | rps | p50 | p95 | p99 | errors |"
echo "|---|---|---|---|---|---|---|"
for transport in http binary; do
    for c in $steps; do
        if [ "$transport" = http ]; then target=(--http "$http"); else target=(--unix "$work/w.sock"); fi
        r=$("$load" load "${target[@]}" --connections "$c" --seconds "$seconds")
        python3 - "$transport" "$c" "$r" <<'PY'
import json, sys
t, c, r = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ms = lambda us: f"{us/1000:.2f} ms"
print(f"| {t} | {c} | {r['rps']:,.0f} | {ms(r['p50_us'])} | {ms(r['p95_us'])} | {ms(r['p99_us'])} "
      f"| {100*r['error_rate']:.2f} % {dict((k, v) for k, v in r['statuses'].items() if k != '200') or ''} |")
PY
    done
done
