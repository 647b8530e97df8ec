#!/usr/bin/env bash
# What each filter costs the server over HTTP, in its own CPU time: a
# release `wharf serve` with a warm echo agent behind no filter, `headers`
# (declared effects: no guest call), `allow` (one guest call that allows),
# `auth` (an HS256 JWT, the same token on every request) and the
# `headers` + `auth` chain. wrk posts 1 KiB bodies at c=50 for
# LOAD_SECONDS (default 6) per row, the rows in turn, LOAD_ROUNDS times
# (default 3). For each run the server's user + system CPU time (from
# /proc/PID/stat) is divided by the requests wrk completed: the server's
# CPU per request, which the load client, sharing the same cores, does not
# enter (requests a second do).
# WHARF_BEFORE=PATH (a `wharf` binary of the commit before a change)
# serves the same configuration beside this build, each row measured on
# both in turn; its guests are this build's, except those found in
# WHARF_BEFORE_GUESTS=DIR (`echo`, `allow`, `auth`, `headers` .wasm files
# of that commit, for a change to the WIT or to a shipped policy).
# Prints a Markdown table: per round, then the medians and what each row
# adds over no filter. Installs wrk from Debian when missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
http=127.0.0.1:9005
# shellcheck source=../lib/serve.sh
. "$root/scripts/lib/serve.sh"
wharf_build
# fill_agents DIR [GUESTS]: the agents and filters of the configuration,
# each guest from GUESTS when it has it, else this build's.
fill_agents() {
    mkdir -p "$1"
    pick() { if [ -f "${2:-}/$1.wasm" ]; then echo "$2/$1.wasm"; else echo "$guests/$1.wasm"; fi; }
    for a in plain hdr allowed authed chain; do cp "$(pick echo "${2:-}")" "$1/$a.wasm"; done
    for g in allow auth headers; do cp "$(pick "$g" "${2:-}")" "$1/$g.wasm"; done
}
fill_agents "$work/agents"
token=$(load_token)
wrk_post "wrk.headers[\"authorization\"] = \"Bearer $token\"" \
    'wrk.headers["content-type"] = "application/octet-stream"'
before_http=127.0.0.1:9006
config() { # LISTEN
    cat <<KDL
listen "$1"
agents "agents"
tasks { path "tasks.db"; }
audit #false
instances { mode "warm"; max 4 }
filter "allow" { instances { mode "warm"; max 4 }; }
filter "auth" {
    instances { mode "warm"; max 4 }
    config { secret "load test secret" }
}
filter "headers" { instances { mode "warm"; max 4 }; }
agent "plain" { filters #false; }
agent "hdr" { filters "headers"; }
agent "allowed" { filters "allow"; }
agent "authed" { filters "auth"; }
agent "chain" { filters "headers" "auth"; }
KDL
}
wharf_start "$(config "$http")"
now_pid=$wharf_pid
servers="now"
if [ -n "${WHARF_BEFORE:-}" ]; then
    fill_agents "$work/before/agents" "${WHARF_BEFORE_GUESTS:-}"
    config "$before_http" > "$work/before/wharf.kdl"
    "$WHARF_BEFORE" serve --config "$work/before/wharf.kdl" 2>"$work/before.log" &
    before_pid=$!
    for _ in $(seq 1 200); do
        curl -fsS "http://$before_http/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    servers="now before"
fi
addr() { if [ "$1" = now ]; then echo "$http"; else echo "$before_http"; fi; }
for server in $servers; do
    for a in plain hdr allowed authed chain; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @"$work/body" \
            -H "authorization: Bearer $token" "http://$(addr "$server")/agents/$a")
        [ "$code" = 200 ] || { echo "$server: agent $a answered $code" >&2; exit 1; }
    done
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# measure SERVER AGENT: prints "rps cpu_us_per_request"
measure() {
    local t0 t1 out pid
    if [ "$1" = now ]; then pid=$now_pid; else pid=$before_pid; fi
    t0=$(cpu_ticks "$pid")
    out=$(wrk -t1 -c50 -d"${LOAD_SECONDS:-6}s" -s "$work/post.lua" "http://$(addr "$1")/agents/$2")
    t1=$(cpu_ticks "$pid")
    echo "$out" | grep -q "Non-2xx" && { echo "agent $1: non-2xx answers" >&2; exit 1; }
    echo "$out" | awk -v t=$((t1 - t0)) -v hz="$hz" '
        /requests in/ {n = $1} /Requests\/sec/ {r = $2}
        END {printf "%.0f %.2f\n", r, t / hz / n * 1e6}'
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

rows="plain hdr allowed authed chain"
declare -A rps cpu
echo "| round | build | row | rps at c=50 | server CPU per request |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "${LOAD_ROUNDS:-3}"); do
    for a in $rows; do
        for server in $servers; do
            read -r r c < <(measure "$server" "$a")
            rps[$server.$a]="${rps[$server.$a]:-} $r"
            cpu[$server.$a]="${cpu[$server.$a]:-} $c"
            echo "| $round | $server | $a | $r | $c µs |"
        done
    done
done
echo
echo "| build | row | rps (median) | ÷ no filter | server CPU per request (median) | added over no filter |"
echo "|---|---|---|---|---|---|"
for server in $servers; do
    base_rps=$(echo "${rps[$server.plain]}" | median)
    base_cpu=$(echo "${cpu[$server.plain]}" | median)
    for a in $rows; do
        r=$(echo "${rps[$server.$a]}" | median)
        c=$(echo "${cpu[$server.$a]}" | median)
        awk -v s="$server" -v a="$a" -v r="$r" -v c="$c" -v br="$base_rps" -v bc="$base_cpu" \
            'BEGIN {printf "| %s | %s | %d | %.2f | %.1f µs | %+.1f µs |\n", s, a, r, r / br, c, c - bc}'
    done
done
