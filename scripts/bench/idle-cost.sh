#!/usr/bin/env bash
# What a directory of idle agents costs while the host serves nothing: N
# distinct `tenant` agents (scripts/lib/tenants.py, as many-agents.sh makes
# them), default settings (fresh instances), a release Wharf. From
# IDLE_SETTLE seconds after /healthz answers, the CPU time the process
# spends over IDLE_SECONDS (utime + stime from /proc/PID/stat), and the
# health probes it made meanwhile (`wharf_health_probes_total`, "—" on a
# build without it).
#   IDLE_AGENTS   default 2000
#   IDLE_SETTLE   default 15
#   IDLE_SECONDS  default 120
#   WHARF_BEFORE  a `wharf` binary of the commit before a change, measured
#                 after this build, on the same directory and cache
# Shares target/bench-many (copies and compile cache) with many-agents.sh.
# Prints a Markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
agents="${IDLE_AGENTS:-2000}"
settle="${IDLE_SETTLE:-15}"
seconds="${IDLE_SECONDS:-120}"
http="127.0.0.1:9033"

guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --release --quiet -p wharf --bin wharf
target="${CARGO_TARGET_DIR:-$root/target}"
binaries=("$target/release/wharf")
[ -n "${WHARF_BEFORE:-}" ] && binaries+=("$WHARF_BEFORE")

keep="$target/bench-many"
mkdir -p "$keep"
python3 scripts/lib/tenants.py "$guests/tenant.wasm" "$keep/all" "$agents"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/agents"
find "$keep/all" -name 't-*.wasm' | sort | head -n "$agents" | xargs -r ln -t "$work/agents"
cat > "$work/wharf.kdl" <<KDL
listen "$http"
agents "$work/agents"
cache "$keep/cache"
tasks { path "$work/tasks.db"; }
audit #false
KDL

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
probes() {
    curl -fsS "http://$http/metrics" |
        awk '$1 == "wharf_health_probes_total" { print $2; found = 1 } END { if (!found) print "—" }'
}
hz=$(getconf CLK_TCK)

echo "| build | agents | CPU over ${seconds} s, idle | share of a core | probes meanwhile |"
echo "|---|---|---|---|---|"
for bin in "${binaries[@]}"; do
    rm -f "$work"/tasks.db*
    "$bin" serve --config "$work/wharf.kdl" >/dev/null 2>"$work/wharf.log" &
    pid=$!
    until curl -fsS "http://$http/healthz" >/dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/wharf.log" >&2; exit 1; }
        sleep 0.05
    done
    sleep "$settle"
    t0=$(ticks "$pid") p0=$(probes)
    sleep "$seconds"
    t1=$(ticks "$pid") p1=$(probes)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f s", (b - a) / hz }')
    share=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.1f %%", 100 * (b - a) / hz / s }')
    made="—"
    [ "$p0" != "—" ] && made=$(awk -v a="$p0" -v b="$p1" 'BEGIN { printf "%d", b - a }')
    label="this build"
    [ "$bin" = "${WHARF_BEFORE:-}" ] && label="before"
    echo "| $label | $agents | $cpu | $share | $made |"
done
