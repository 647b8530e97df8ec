#!/usr/bin/env bash
# Many agents on one node: a directory of N distinct `tenant` agents
# (scripts/lib/tenants.py: each copy's data differs, so each has its own
# digest, compiled code and memory image), served by a release Wharf with
# default settings (fresh instances), 1 KiB POSTs from wrk at c=50 spread
# uniformly at random over the first K agents, for each K in MANY_SPREADS.
# Also measures, for a directory of each size in MANY_DIRS: the start with
# a warm compile cache (until /healthz answers, until the last agent
# answers, and until every agent is loaded), loading before serving and,
# on this build, while serving (`server { load "while-serving" }`, the
# last agent asked for first), and the idle RSS per agent against a
# directory of one; and
# the RSS and what freed pool slots keep once each spread's load has run;
# and, on each build, the idle RSS once every agent is unloaded
# (`instances { unload-after "1s" }`) and what a first request to an
# unloaded agent costs against one to a loaded agent.
#   MANY_SPREADS  default "1 10 100 1000 10000"
#   MANY_DIRS     default "1000 10000"; "" skips the start and memory table
#   MANY_SECONDS  wrk run per spread, default 15
#   MANY_EXTRA    KDL added to every configuration served, e.g.
#                 'server { instance-slots 5000; }'
#   WHARF_BEFORE  a `wharf` binary of the commit before a change: every
#                 row is measured on both, alternating (one compile cache: it
#                 holds code per engine and checks it on every load)
# The copies and compile caches are kept in target/bench-many (the first
# run compiles every copy once). Prints Markdown tables.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source scripts/lib/serve.sh
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
spreads="${MANY_SPREADS:-1 10 100 1000 10000}"
dirs="${MANY_DIRS-1000 10000}"
seconds="${MANY_SECONDS:-15}"
extra="${MANY_EXTRA:-}"
http="127.0.0.1:9031"

guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --release --quiet -p wharf --bin wharf
target="${CARGO_TARGET_DIR:-$root/target}"
binaries=("$target/release/wharf")
[ -n "${WHARF_BEFORE:-}" ] && binaries+=("$WHARF_BEFORE")

keep="$target/bench-many"
largest=1
for n in $spreads $dirs; do [ "$n" -gt "$largest" ] && largest="$n"; done
mkdir -p "$keep"
python3 scripts/lib/tenants.py "$guests/tenant.wasm" "$keep/all" "$largest"

work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# dir_of N: a directory holding the first N copies (hard links).
dir_of() {
    local d="$work/dir-$1"
    if [ ! -d "$d" ]; then
        mkdir -p "$d"
        find "$keep/all" -name 't-*.wasm' | sort | head -n "$1" | xargs -r ln -t "$d"
    fi
    echo "$d"
}

# start BIN DIR [LOAD]: serves DIR with BIN (and `server { load LOAD }`
# when given); sets $pid and $took_health (seconds until /healthz answered).
start() {
    local bin="$1" dir="$2" load="${3:-}" cache
    cache="$keep/cache"
    cat > "$work/wharf.kdl" <<KDL
listen "$http"
agents "$dir"
cache "$cache"
tasks { path "$work/tasks.db"; }
audit #false
KDL
    [ -n "$load" ] && echo "server { load \"$load\"; }" >> "$work/wharf.kdl"
    [ -n "${extra:-}" ] && echo "$extra" >> "$work/wharf.kdl"

    rm -f "$work"/tasks.db*
    local began
    began=$(date +%s.%N)
    "$bin" serve --config "$work/wharf.kdl" >/dev/null 2>"$work/wharf.log" &
    pid=$!
    until curl -fsS "http://$http/healthz" >/dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || { cat "$work/wharf.log" >&2; exit 1; }
        sleep 0.02
    done
    took_health=$(since "$began")
    start_began="$began"
}

# since T: seconds from T (a `date +%s.%N`) to now.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# spread_lua K: $work/post.lua POSTs 1 KiB to one of the first K agents,
# uniformly at random.
spread_lua() {
    wrk_post 'local threads = 0' \
        'function setup(thread) threads = threads + 1; thread:set("seed", threads) end' \
        'function init() math.randomseed(seed * 7919) end' \
        "function request() return wrk.format(nil, string.format(\"/agents/t-%06d/\", math.random(0, $1 - 1))) end"
}

# kept_mb: what freed pool slots keep resident now (`—` on a build without
# the gauge).
kept_mb() {
    curl -fsS "http://$http/metrics" | awk '$1 == "wharf_pool_idle_resident_bytes" { printf "%d MB", $2 / 1048576; found = 1 } END { if (!found) printf "—" }'
}

label() { if [ "$1" = "${binaries[0]}" ]; then echo "this"; else echo "before"; fi; }

# loaded_all: whether a start that loads while serving has loaded every
# agent (its log says so; scraping /metrics for the gauge instead would
# cost the server a render of every agent's series each time).
loaded_all() { grep -q "agents loaded while serving" "$work/wharf.log"; }

# loads BIN: the load settings to measure BIN with (the build before may
# not know `load`).
loads() { if [ "$1" = "${binaries[0]}" ]; then echo "before-serving while-serving"; else echo "-"; fi; }

if [ -n "$dirs" ]; then
# The idle RSS of each build serving one agent: what "per agent" is over.
declare -A base_of
echo "## Start and idle memory (warm compile cache)"
echo
echo "| build | load | agents | /healthz after | last agent answers after | all loaded after | idle RSS | RSS per agent over one |"
echo "|---|---|---|---|---|---|---|---|"
for bin in "${binaries[@]}"; do
    start "$bin" "$(dir_of 1)"
    sleep 1
    base=$(rss_kb "$pid")
    base_of[$bin]="$base"
    stop
    for n in $dirs; do
        start "$bin" "$(dir_of "$n")"   # fills the cache on a first run
        stop
        for load in $(loads "$bin"); do
            [ "$load" = "-" ] && load=""
            start "$bin" "$(dir_of "$n")" "$load"
            last=$(printf 't-%06d' $((n - 1)))
            until curl -fsS -o /dev/null -X POST -d x "http://$http/agents/$last/"; do sleep 0.02; done
            took_last=$(since "$start_began")
            took_all="$took_health"
            if [ "$load" = while-serving ]; then
                until loaded_all; do sleep 0.02; done
                took_all=$(since "$start_began")
            fi
            sleep 1
            rss=$(rss_kb "$pid")
            stop
            per=$(( (rss - base) / (n - 1 > 0 ? n - 1 : 1) ))
            printf '| %s | %s | %s | %s s | %s s | %s s | %d MB | %d KB |\n' "$(label "$bin")" \
                "${load:-before-serving}" "$n" "$took_health" "$took_last" "$took_all" \
                $((rss / 1024)) "$per"
        done
    done
done

echo
echo "## Idle agents unloaded (\`instances { unload-after \"1s\" }\`)"
echo
echo "| build | agents | idle RSS, all unloaded | RSS per agent over one | first request to each of (up to) 100 unloaded agents, mean | the same again, loaded |"
echo "|---|---|---|---|---|---|"
# mean_ms N: the mean time of one POST to each of the first N agents.
mean_ms() {
    local i total=0 t
    for i in $(seq 0 $(($1 - 1))); do
        t=$(curl -fsS -o /dev/null -w '%{time_total}' -X POST -d x "http://$http/agents/$(printf 't-%06d' "$i")/")
        total=$(awk -v a="$total" -v b="$t" 'BEGIN { print a + b }')
    done
    awk -v a="$total" -v n="$1" 'BEGIN { printf "%.2f ms", a * 1000 / n }'
}
for bin in "${binaries[@]}"; do
    for n in $dirs; do
        extra="$(printf '%s\ninstances { unload-after "1s"; }' "${MANY_EXTRA:-}")"
        start "$bin" "$(dir_of "$n")"
        until curl -fsS "http://$http/metrics" | awk -v n="$n" '$1 == "wharf_agent_unloads_total" && $2 >= n { ok = 1 } END { exit !ok }'; do
            sleep 0.2
        done
        sleep 1
        rss=$(rss_kb "$pid")
        asked=$(( n < 100 ? n : 100 ))
        cold=$(mean_ms "$asked")
        warm=$(mean_ms "$asked")
        stop
        extra="${MANY_EXTRA:-}"
        printf '| %s | %s | %d MB | %d KB | %s | %s |\n' "$(label "$bin")" "$n" $((rss / 1024)) \
            $(( (rss - ${base_of[$bin]}) / (n - 1 > 0 ? n - 1 : 1) )) "$cold" "$warm"
    done
done

fi
echo
echo "## Load spread over K agents (c=50, ${seconds} s, 1 KiB POST; directory of $largest)"
echo
echo "| build | K | rps | × K=1 | p50 | p99 | RSS after | kept by freed slots |"
echo "|---|---|---|---|---|---|---|---|"
declare -A one
for k in $spreads; do
    spread_lua "$k"
    for bin in "${binaries[@]}"; do
        start "$bin" "$(dir_of "$largest")"
        # Warm-up: three seconds of the same load.
        wrk -t2 -c50 -d3s -s "$work/post.lua" "http://$http" >/dev/null
        out=$(wrk -t2 -c50 -d"${seconds}s" --latency -s "$work/post.lua" "http://$http")
        rss=$(rss_kb "$pid")
        kept=$(kept_mb)
        stop
        rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
        p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
        p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
        errors=$(grep -E "Non-2xx|Socket errors" <<<"$out" || true)
        [ -n "$errors" ] && echo "K=$k: $errors" >&2
        [ -z "${one[$bin]:-}" ] && one[$bin]="$rps"
        printf '| %s | %s | %.0f | %s | %s | %s | %d MB | %s |\n' "$(label "$bin")" "$k" "$rps" \
            "$(awk -v a="$rps" -v b="${one[$bin]}" 'BEGIN { printf "%.2f", a / b }')" "$p50" "$p99" \
            $((rss / 1024)) "$kept"
    done
done
