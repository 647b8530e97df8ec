#!/usr/bin/env bash
# The binary transport beside HTTP: the same `echo` agent (fresh instances,
# and a warm pool) over HTTP/1.1 keep-alive and over the binary transport's
# Unix socket, driven by the same client (tools/load), 1 KiB bodies.
#   rps: HTTP at c=50 against binary with the same 50 requests in flight
#   (2 connections × 25 pipelined);
#   p50/p99 at one request in flight (c=1) on each.
# The floor beside them: the bare hyper echo (examples/bare_echo.rs), no
# guest, driven by the same client. LOAD_SECONDS (default 15) per run.
# Prints a Markdown table with ratios.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${LOAD_SECONDS:-15}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
http=127.0.0.1:9011
. scripts/lib/serve.sh
wharf_build
cargo build --release --quiet -p wharf --example bare-echo
target/release/examples/bare-echo 127.0.0.1:9010 2>/dev/null &
cp "$guests/echo.wasm" "$work/agents/echo.wasm"
cp "$guests/echo.wasm" "$work/agents/warm.wasm"
wharf_start "listen \"$http\"
agents \"agents\"
audit #false
binary { unix \"$work/w.sock\" }
agent \"warm\" { instances { mode \"warm\"; max 4 } }"

run() { "$load" load --seconds "$seconds" "$@"; }
bare=$(run --http 127.0.0.1:9010 --connections 50)
bare1=$(run --http 127.0.0.1:9010 --connections 1)
echo "| agent | HTTP rps (c=50) | binary rps (2×25 pipelined) | ratio | HTTP p50 / p99 (c=1) | binary p50 / p99 (c=1) | p50 ratio |"
echo "|---|---|---|---|---|---|---|"
for agent in echo warm; do
    h=$(run --http "$http" --agent "$agent" --connections 50)
    b=$(run --unix "$work/w.sock" --agent "$agent" --connections 2 --depth 25)
    h1=$(run --http "$http" --agent "$agent" --connections 1)
    b1=$(run --unix "$work/w.sock" --agent "$agent" --connections 1)
    for r in "$h" "$b" "$h1" "$b1"; do
        [ "$(echo "$r" | json '["errors"]')" = 0 ] || { echo "errors: $r" >&2; exit 1; }
    done
    python3 - "$agent" "$h" "$b" "$h1" "$b1" <<'PY'
import json, sys
agent, h, b, h1, b1 = sys.argv[1], *map(json.loads, sys.argv[2:])
print(f"| {agent} | {h['rps']:,.0f} | {b['rps']:,.0f} | {b['rps']/h['rps']:.2f}× "
      f"| {h1['p50_us']} / {h1['p99_us']} µs | {b1['p50_us']} / {b1['p99_us']} µs "
      f"| {b1['p50_us']/h1['p50_us']:.2f}× |")
PY
done
python3 - "$bare" "$bare1" <<'PY'
import json, sys
b, b1 = map(json.loads, sys.argv[1:])
print(f"| bare hyper echo, no guest (the floor) | {b['rps']:,.0f} | | | {b1['p50_us']} / {b1['p99_us']} µs | | |")
PY
