#!/usr/bin/env bash
# What each filter costs the server over HTTP, in its own CPU time: a
# release `wharf serve` with a warm echo agent behind no filter, `headers`
# (declared effects: no guest call), `allow` (one guest call that allows),
# `auth` (an HS256 JWT, remembered) and the `headers` + `auth` chain. wrk
# posts 1 KiB bodies at c=50 for LOAD_SECONDS (default 6) per row, the rows
# in turn, LOAD_ROUNDS times (default 3). For each run the server's user +
# system CPU time (from /proc/PID/stat) is divided by the requests wrk
# completed: the server's CPU per request, which the load client, sharing
# the same cores, does not enter (requests a second do).
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
for a in plain hdr allowed authed chain; do cp "$guests/echo.wasm" "$work/agents/$a.wasm"; done
cp "$guests/allow.wasm" "$guests/auth.wasm" "$guests/headers.wasm" "$work/agents/"
token=$(load_token)
wrk_post "wrk.headers[\"authorization\"] = \"Bearer $token\"" \
    'wrk.headers["content-type"] = "application/octet-stream"'
wharf_start "$(cat <<KDL
listen "$http"
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
)"
for a in plain hdr allowed authed chain; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @"$work/body" \
        -H "authorization: Bearer $token" "http://$http/agents/$a")
    [ "$code" = 200 ] || { echo "agent $a answered $code" >&2; exit 1; }
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$wharf_pid/stat"; }
hz=$(getconf CLK_TCK)
# measure AGENT: prints "rps cpu_us_per_request"
measure() {
    local t0 t1 out
    t0=$(cpu_ticks)
    out=$(wrk -t1 -c50 -d"${LOAD_SECONDS:-6}s" -s "$work/post.lua" "http://$http/agents/$1")
    t1=$(cpu_ticks)
    echo "$out" | grep -q "Non-2xx" && { echo "agent $1: non-2xx answers" >&2; exit 1; }
    echo "$out" | awk -v t=$((t1 - t0)) -v hz="$hz" '
        /requests in/ {n = $1} /Requests\/sec/ {r = $2}
        END {printf "%.0f %.2f\n", r, t / hz / n * 1e6}'
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

rows="plain hdr allowed authed chain"
declare -A rps cpu
echo "| round | row | rps at c=50 | server CPU per request |"
echo "|---|---|---|---|"
for round in $(seq 1 "${LOAD_ROUNDS:-3}"); do
    for a in $rows; do
        read -r r c < <(measure "$a")
        rps[$a]="${rps[$a]:-} $r"
        cpu[$a]="${cpu[$a]:-} $c"
        echo "| $round | $a | $r | $c µs |"
    done
done
echo
echo "| row | rps (median) | ÷ no filter | server CPU per request (median) | added over no filter |"
echo "|---|---|---|---|---|"
base_rps=$(echo "${rps[plain]}" | median)
base_cpu=$(echo "${cpu[plain]}" | median)
for a in $rows; do
    r=$(echo "${rps[$a]}" | median)
    c=$(echo "${cpu[$a]}" | median)
    awk -v a="$a" -v r="$r" -v c="$c" -v br="$base_rps" -v bc="$base_cpu" \
        'BEGIN {printf "| %s | %d | %.2f | %.1f µs | %+.1f µs |\n", a, r, r / br, c, c - bc}'
done
