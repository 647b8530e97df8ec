#!/usr/bin/env bash
# Where a fresh instance's request spends the server's CPU: serves the echo
# agent (fresh, and warm beside it) from a release build, loads
# each with wrk (1 KiB POST, c=50), samples the server with `perf record`
# (cpu-clock, DWARF call graphs) and prints, per agent, the share of the
# server's samples under each stage of the request:
#   scripts/bench/profile-fresh.sh [SECONDS]     (default 10 s of samples each)
# Installs wrk and perf (Debian's linux-perf) when missing. The shares are
# inclusive (a stage's callees count in it) and read in one run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${1:-10}"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
command -v perf >/dev/null || { apt-get update -q && apt-get install -y -q linux-perf; }

# The release build with line tables (the `profiling` profile), so perf
# can name functions and lines.
guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --profile profiling --quiet --bin wharf --example bare-echo
wharf="$root/target/profiling/wharf" http=127.0.0.1:9003
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=lib/serve.sh
. "$root/scripts/lib/serve.sh"
mkdir -p "$work/agents"
for name in echo warm; do cp "$guests/echo.wasm" "$work/agents/$name.wasm"; done
RUST_LOG=warn wharf_start 'listen "127.0.0.1:9003"
agents "agents"
audit #false
agent "warm" {
    instances { mode "warm"; max 4 }
}'
server=$wharf_pid
wrk_post

# name|symbol (a substring of the symbol perf reports)
stages=(
    "instantiate (new store and instance)|wharf::runtime::call::AgentImage::instantiate_async::{{closure}}"
    "  store setup|wharf::runtime::call::new_store"
    "  wasmtime's instantiation|wasmtime::runtime::component::instance::InstancePre<T>::instantiate_async::{{closure}}"
    "guest call|wharf::runtime::call::Live::call_async::{{closure}}"
    "store drop|core::ptr::drop_in_place<wasmtime::runtime::store::StoreInner<wharf::runtime::state::GuestState>>"
    "  slot reset (PAGEMAP_SCAN)|wasmtime::runtime::vm::sys::unix::pagemap::reset_with_pagemap"
    "page faults|[k] asm_exc_page_fault"
    "tower stack and route (attempt included)|wharf::router::AgentRoute::dispatch::{{closure}}"
    "  one attempt|<wharf::router::service::Attempt as tower_service::Service<wharf::request::Request>>::call::{{closure}}"
    "HTTP transport (hyper, axum; pipeline included)|<hyper::server::conn::http1::UpgradeableConnection<I,S> as core::future::future::Future>::poll"
    "system calls|[k] do_syscall_64"
)
for agent in echo warm; do
    url="http://127.0.0.1:9003/agents/$agent"
    wrk -t1 -c50 -d"$((seconds + 4))s" -s "$work/post.lua" "$url" >"$work/wrk-$agent" &
    sleep 2
    perf record -q -F 499 -e cpu-clock --call-graph dwarf,16384 -p "$server" \
        -o "$work/$agent.data" -- sleep "$seconds" >/dev/null 2>&1
    wait "$(jobs -p | tail -n 1)" || true
    perf report -i "$work/$agent.data" --children --sort sym --stdio -g none 2>/dev/null \
        >"$work/$agent.txt"
    echo "## $agent ($(awk '/Requests\/sec/ {print $2}' "$work/wrk-$agent") rps under perf)"
    echo "| stage | share of server samples |"
    echo "|---|---|"
    for stage in "${stages[@]}"; do
        name="${stage%%|*}" symbol="${stage#*|}"
        share=$(awk -v s="$symbol" 'index($0, s) && $1 ~ /%$/ {print $1; exit}' "$work/$agent.txt")
        echo "| $name | ${share:-0%} |"
    done
    echo
done
