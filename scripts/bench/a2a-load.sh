#!/usr/bin/env bash
# A2A sends over HTTP from wrk against a release `wharf serve`: JSON-RPC
# SendMessage to the `scribe` agent (warm), which completes each task in
# its turn, with tasks kept in SQLite at `durability "queued"` and at
# `durability "commit"` (each server its own store). Per server: latency
# at one client (c=1, p50/p90/p99 of every request, wrk --latency) and
# sends a second at 16 clients (c=16), each answer checked to be a
# completed task. WHARF_BEFORE=PATH serves the same beside this build and
# measures both, alternating, A2A_ROUNDS times (default 3).
# A2A_SECONDS changes each row's 10 s; WHARF_BIN=PATH serves that build
# instead of building one (release). Installs wrk from Debian when missing.
# Prints a Markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
seconds="${A2A_SECONDS:-10}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=../lib/serve.sh
. "$root/scripts/lib/serve.sh"
if [ -n "${WHARF_BIN:-}" ]; then
    guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
    wharf="$WHARF_BIN"
    mkdir -p "$work/agents"
else
    wharf_build
fi
cp "$guests/scribe.wasm" "$work/agents/"

cat > "$work/send.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["a2a-version"] = "1.0"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
    .. '{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hello brave new world"}]}}}'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
    if status ~= 200 or not string.find(body, "TASK_STATE_COMPLETED", 1, true) then
        bad = bad + 1
    end
end
function done(summary, latency, requests)
    local n = 0
    for _, t in ipairs(threads) do n = n + t:get("bad") end
    io.write(string.format("answers %d bad %d\n", summary.requests, n))
end
LUA

# serve NAME BINARY PORT DURABILITY: one server on its own store; waits
# until it answers.
serve() {
    local name="$1" binary="$2" port="$3" durability="$4"
    mkdir -p "$work/$name"
    cat > "$work/$name/wharf.kdl" <<KDL
listen "127.0.0.1:$port"
agents "$work/agents"
tasks { path "$work/$name/tasks.db"; durability "$durability"; }
audit #false
agent "scribe" {
    instances { mode "warm"; max 4 }
}
KDL
    RUST_LOG=warn "$binary" serve --config "$work/$name/wharf.kdl" >"$work/$name/log" 2>&1 &
    for _ in $(seq 1 200); do
        curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
        sleep 0.1
    done
    cat "$work/$name/log" >&2
    exit 1
}

# run PORT CLIENTS [--latency]: wrk's output, refused when an answer was
# not a completed task.
run() {
    local out
    out="$(wrk -t1 -c"$2" -d"${seconds}s" ${3:-} -s "$work/send.lua" "http://127.0.0.1:$1/a2a/scribe")"
    if ! grep -q ' bad 0$' <<<"$out" || grep -q 'Non-2xx' <<<"$out"; then
        echo "$out" >&2
        echo "an answer was not a completed task" >&2
        exit 1
    fi
    echo "$out"
}
# A latency in wrk's units, in µs.
us() { awk '{v=$1; if (v ~ /us$/) v+=0; else if (v ~ /ms$/) v*=1000; else if (v ~ /s$/) v*=1000000; printf "%.0f", v}'; }
latency() {
    local out
    out="$(run "$1" 1 --latency)"
    for p in 50 90 99; do awk -v p="$p%" '$1 == p {print $2}' <<<"$out" | us; printf ' '; done
    echo
}
rps() { run "$1" 16 | awk '/Requests\/sec/ {printf "%.0f", $2}'; }

builds="this"
serve this-queued "$wharf" 9102 queued
serve this-commit "$wharf" 9103 commit
if [ -n "${WHARF_BEFORE:-}" ]; then
    builds="this before"
    serve before-queued "$WHARF_BEFORE" 9104 queued
    serve before-commit "$WHARF_BEFORE" 9105 commit
fi
port() {
    case "$1-$2" in
        this-queued) echo 9102 ;; this-commit) echo 9103 ;;
        before-queued) echo 9104 ;; before-commit) echo 9105 ;;
    esac
}
# Warm each server's pool and store.
for b in $builds; do for d in queued commit; do
    wrk -t1 -c16 -d2s -s "$work/send.lua" "http://127.0.0.1:$(port "$b" "$d")/a2a/scribe" >/dev/null
done; done

echo "| round | build | durability | p50 at c=1 (µs) | p90 | p99 | sends/s at c=16 |"
echo "|---|---|---|---|---|---|---|"
for round in $(seq 1 "${A2A_ROUNDS:-3}"); do
    for b in $builds; do for d in queued commit; do
        p="$(port "$b" "$d")"
        read -r p50 p90 p99 < <(latency "$p")
        echo "| $round | $b | $d | $p50 | $p90 | $p99 | $(rps "$p") |"
    done; done
done
