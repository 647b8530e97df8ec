#!/usr/bin/env bash
# Other agents' latency while components reload: wrk --latency against a
# warm `echo` (c=1 and c=10, 1 KiB POST bodies) on a release Wharf, first
# with nothing reloading, then while a loop keeps landing new builds of
# another agent (a Go echo, then a Python echo, each a new digest, so each
# compiles) into the agents directory. Prints a Markdown table.
# Installs wrk from Debian when missing.
#   RELOAD_SECONDS (default 20): length of each wrk run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
duration="${RELOAD_SECONDS:-20}"

guests="$(scripts/setup/build-guests.sh | tail -n 1)"
lang="$guests/../../lang"
cargo build --release --quiet --bin wharf
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/agents"
cp "$guests/echo.wasm" "$work/agents/echo.wasm"
cat > "$work/wharf.kdl" <<'KDL'
listen "127.0.0.1:9003"
agents "agents"
audit #false
cache "cache"
tasks { path "tasks.db" }
agent "echo" {
    instances { mode "warm"; max 4 }
}
KDL
# shellcheck source=lib/serve.sh
. "$root/scripts/lib/serve.sh"
wrk_post

RUST_LOG=warn,wharf::reload=info target/release/wharf serve --config "$work/wharf.kdl" 2>"$work/log" &
wharf_pid=$!
for _ in $(seq 1 100); do
    curl -sf -o /dev/null -d x http://127.0.0.1:9003/agents/echo && break
    sleep 0.2
done

# Lands a new build of $1 as `busy.wasm` in a loop: the component with a
# custom section carrying a counter appended (a new digest each time),
# written to a hidden file and renamed into place; waits for each to answer.
reload_loop() {
    exec python3 - "$1" "$work/agents" <<'PY'
import os, sys, time
src, agents = sys.argv[1], sys.argv[2]
base = open(src, "rb").read()
n = 0
while True:
    n += 1
    name, payload = b"wharf-bench", n.to_bytes(8, "little")
    body = base + bytes([0, 1 + len(name) + len(payload), len(name)]) + name + payload
    tmp = os.path.join(agents, ".busy-%d.tmp" % os.getpid())
    open(tmp, "wb").write(body)
    os.rename(tmp, os.path.join(agents, "busy.wasm"))
    time.sleep(0.5)
PY
}

lat() {
    wrk -t1 -c"$1" -d"${duration}s" --latency -s "$work/post.lua" http://127.0.0.1:9003/agents/echo |
        awk '/ 50%/ {p50=$2} / 99%/ {p99=$2} /Requests\/sec/ {rps=$2} /Non-2xx/ {bad=$5} /Socket errors/ {bad = bad "+errors"} END {print p50, p99, rps, (bad == "" ? 0 : bad)}'
}

quiet() {
    read -r p50 p99 rps bad < <(lat "$1")
    echo "| echo, c=$1 | nothing$2 | $p50 | $p99 | $rps | $bad |"
}

# The compile threads' niceness (19: the lowest priority), for the record.
echo "compile threads: $(ps -L -o ni=,comm= -p "$wharf_pid" | awk '/wharf-compile/ {print $2 " nice " $1}' | sort -u | tr '\n' ' ')"
echo
echo "| other agent's load | reloading | p50 | p99 | rps | non-2xx |"
echo "|---|---|---|---|---|---|"
for c in 1 10; do
    quiet "$c" ""
    for busy in "$lang/echo-go.wasm" "$lang/echo-py.wasm"; do
        reload_loop "$busy" &
        loop=$!
        sleep 1
        before=$(grep -c 'wharf::reload: reloaded' "$work/log" || true)
        read -r p50 p99 rps bad < <(lat "$c")
        after=$(grep -c 'wharf::reload: reloaded' "$work/log" || true)
        kill "$loop"; wait "$loop" 2>/dev/null || true
        rm -f "$work/agents/busy.wasm"
        echo "| echo, c=$c | $(basename "$busy" .wasm) builds, $((after - before)) reloads | $p50 | $p99 | $rps | $bad |"
    done
    sleep 10
    quiet "$c" " (again, after)"
done
