#!/usr/bin/env bash
# HTTP load on loopback: Wharf (echo agent, fresh; fresh with 4 instances
# made ahead; warm; warm with the `headers` + `auth` filter chain; warm with
# the `waf` baseline; the embedded default's chain, `headers` + `waf`
# baseline, before a fresh echo; warm with `waf` running CRS 4 at PL1;
# the warm echo over HTTPS, `tls-warm`: a second Wharf with a `tls` block
# and a P-256 certificate made by openssl, wrk keeping its connections)
# against the bare hyper echo ceiling (examples/bare_echo.rs), 1 KiB POST
# bodies. When scripts/bench/waf-old-engine.sh has built the previous WAF
# engine, the rows old-waf-echo and old-default run it the same way; when
# scripts/bench/waf-at.sh REV has built the filter at an earlier revision,
# the rows before-waf-echo, before-default and before-crs-echo run that.
#   c=50 for 20 s: requests per second; c=1 for 10 s: p50/p99 latency.
# WHARF_BEFORE=PATH (a `wharf` binary of the commit before a change)
# serves the same configuration beside this build instead, and the rows
# are measured on both, alternating, LOAD_ROUNDS times (default 3): rps
# at c=50 per round, and the median of each. WHARF_BEFORE_GUESTS=DIR (a
# release guest directory of that commit) gives it that commit's guests
# where they differ from this build's (a change to the WIT or a policy).
# LOAD_SECONDS changes the 20 s; LOAD_AGENTS picks rows (default
# "echo ahead warm chain waf-echo default crs-echo tls-warm", and the old rows;
# "hdr hdr-called chain-called default-called" compare the headers filter's
# declared effects with every phase a call).
# Installs wrk from Debian when missing.
# Prints a Markdown table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
duration="${LOAD_SECONDS:-20}"

guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --release --quiet --bin wharf --example bare-echo
release="${CARGO_TARGET_DIR:-target}/release"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/agents"
cp "$guests/echo.wasm" "$work/agents/echo.wasm"
cp "$guests/echo.wasm" "$work/agents/warm.wasm"
cp "$guests/echo.wasm" "$work/agents/ahead.wasm"
cp "$guests/echo.wasm" "$work/agents/chain.wasm"
for a in chain-called hdr hdr-called default-called; do cp "$guests/echo.wasm" "$work/agents/$a.wasm"; done
cp "$guests/headers.wasm" "$work/agents/headers-called.wasm"
cp "$guests/headers.wasm" "$work/agents/headers-fresh-called.wasm"
cp "$guests/echo.wasm" "$work/agents/waf-echo.wasm"
cp "$guests/echo.wasm" "$work/agents/default.wasm"
cp "$guests/echo.wasm" "$work/agents/crs-echo.wasm"
cp "$guests/auth.wasm" "$guests/headers.wasm" "$guests/waf.wasm" "$work/agents/"
cp "$guests/headers.wasm" "$work/agents/headers-fresh.wasm"
cp "$guests/waf.wasm" "$work/agents/crs.wasm"
old_rows=""
if [ -f "$guests/waf-zentinel.wasm" ]; then
    cp "$guests/waf-zentinel.wasm" "$work/agents/old-waf.wasm"
    cp "$guests/echo.wasm" "$work/agents/old-waf-echo.wasm"
    cp "$guests/echo.wasm" "$work/agents/old-default.wasm"
    old_rows="old-waf-echo old-default"
fi
before_rows=""
if [ -f "$guests/waf-before.wasm" ]; then
    cp "$guests/waf-before.wasm" "$work/agents/before-waf.wasm"
    cp "$guests/waf-before.wasm" "$work/agents/before-crs.wasm"
    for a in before-waf-echo before-default before-crs-echo; do
        cp "$guests/echo.wasm" "$work/agents/$a.wasm"
    done
    before_rows="before-waf-echo before-default before-crs-echo"
fi
cat > "$work/wharf.kdl" <<'KDL'
listen "127.0.0.1:9002"
agents "agents"
tasks { path "tasks.db"; }
audit #false
agent "warm" {
    instances { mode "warm"; max 4 }
}
agent "ahead" {
    instances { mode "fresh"; ahead 4 }
}
filter "auth" {
    instances { mode "warm"; max 4 }
    config { secret "load test secret" }
}
filter "headers" {
    instances { mode "warm"; max 4 }
}
filter "waf" {
    instances { mode "warm"; max 4 }
}
agent "chain" {
    instances { mode "warm"; max 4 }
    filters "headers" "auth"
}
// The same `headers` filter with every phase a call (no declared effects).
filter "headers-called" {
    instances { mode "warm"; max 4 }
    config { declare "off"; }
}
agent "chain-called" {
    instances { mode "warm"; max 4 }
    filters "headers-called" "auth"
}
agent "hdr" {
    instances { mode "warm"; max 4 }
    filters "headers"
}
agent "hdr-called" {
    instances { mode "warm"; max 4 }
    filters "headers-called"
}
filter "headers-fresh-called" {
    config { declare "off"; }
}
agent "default-called" {
    filters "headers-fresh-called" "waf"
}
agent "waf-echo" {
    instances { mode "warm"; max 4 }
    filters "waf"
}
// As the embedded default: a fresh echo behind `headers` (fresh) and the
// `waf` baseline (warm).
agent "default" {
    filters "headers-fresh" "waf"
}
filter "crs" {
    instances { mode "warm"; max 4 }
    config { ruleset "crs"; paranoia 1 }
}
agent "crs-echo" {
    instances { mode "warm"; max 4 }
    filters "crs"
}
KDL
if [ -n "$old_rows" ]; then
    cat >> "$work/wharf.kdl" <<'KDL'
filter "old-waf" {
    instances { mode "warm"; max 4 }
}
agent "old-waf-echo" {
    instances { mode "warm"; max 4 }
    filters "old-waf"
}
agent "old-default" {
    filters "headers-fresh" "old-waf"
}
KDL
fi
if [ -n "$before_rows" ]; then
    cat >> "$work/wharf.kdl" <<'KDL'
filter "before-waf" {
    instances { mode "warm"; max 4 }
}
agent "before-waf-echo" {
    instances { mode "warm"; max 4 }
    filters "before-waf"
}
agent "before-default" {
    filters "headers-fresh" "before-waf"
}
filter "before-crs" {
    instances { mode "warm"; max 4 }
    config { ruleset "crs"; paranoia 1 }
}
agent "before-crs-echo" {
    instances { mode "warm"; max 4 }
    filters "before-crs"
}
KDL
fi
# shellcheck source=lib/serve.sh
. "$root/scripts/lib/serve.sh"
token=$(load_token)
wrk_post "wrk.headers[\"authorization\"] = \"Bearer $token\"" \
    'wrk.headers["content-type"] = "application/octet-stream"'

# The WAF rows post a 1 KiB form, as a browser would (CRS refuses
# application/octet-stream, which is not among its allowed content types).
{
    printf 'name=Ishmael&note='
    head -c 1006 /dev/zero | tr '\0' 'x'
} > "$work/form"
cat > "$work/form.lua" <<LUA
wrk.method = "POST"
local f = io.open("$work/form", "rb")
wrk.body = f:read("*a")
f:close()
wrk.headers["content-type"] = "application/x-www-form-urlencoded"
wrk.headers["accept"] = "text/html"
wrk.headers["user-agent"] = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"
LUA

RUST_LOG=warn "$release/examples/bare-echo" 127.0.0.1:9001 &
RUST_LOG=warn "$release/wharf" serve --config "$work/wharf.kdl" >&2 &
for _ in $(seq 1 100); do
    curl -sf -o /dev/null http://127.0.0.1:9002/healthz && curl -sf -o /dev/null -d x http://127.0.0.1:9001/ && break
    sleep 0.2
done

# serve_beside NAME BINARY PORT SCHEME [LINE]: the same configuration as a
# second server, on its own port and task store (one process per store),
# with LINE after its `listen`; waits until it answers.
serve_beside() {
    local name="$1" binary="$2" port="$3" scheme="$4" line="${5:-}"
    sed -e "s/^listen \"127.0.0.1:9002\"/listen \"127.0.0.1:$port\"${line:+\\n$line}/" \
        -e "s/^tasks { path \"tasks.db\"; }/tasks { path \"tasks-$name.db\"; }/" \
        "$work/wharf.kdl" > "$work/$name.kdl"
    RUST_LOG=warn "$binary" serve --config "$work/$name.kdl" >&2 &
    for _ in $(seq 1 100); do
        curl -skf -o /dev/null "$scheme://127.0.0.1:$port/healthz" && break
        sleep 0.2
    done
}

case " ${LOAD_AGENTS:-tls-warm} " in *" tls-warm "*)
    # The same configuration over HTTPS, with a certificate made here.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$work/tls.key" -out "$work/tls.pem" -days 1 -subj /CN=localhost \
        -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
    serve_beside tls "$release/wharf" 9004 https 'tls { certificate "tls.pem"; key "tls.key"; }'
    ;;
esac

if [ -n "${WHARF_BEFORE:-}" ]; then
    if [ -n "${WHARF_BEFORE_GUESTS:-}" ]; then
        # Each agent file is a copy of one guest: the before server gets
        # that guest as the commit before built it.
        cp -r "$work/agents" "$work/agents-before"
        for f in "$work/agents-before"/*.wasm; do
            for g in "$guests"/*.wasm; do
                if cmp -s "$f" "$g" && [ -f "$WHARF_BEFORE_GUESTS/$(basename "$g")" ]; then
                    cp "$WHARF_BEFORE_GUESTS/$(basename "$g")" "$f"
                    break
                fi
            done
        done
        sed -i 's/^agents "agents"$/agents "agents-before"/' "$work/wharf.kdl"
        serve_beside before "$WHARF_BEFORE" 9003 http
        sed -i 's/^agents "agents-before"$/agents "agents"/' "$work/wharf.kdl"
    else
        serve_beside before "$WHARF_BEFORE" 9003 http
    fi
fi

# rps URL [SCRIPT], lat URL [SCRIPT]
rps() { wrk -t1 -c50 -d"${duration}s" -s "${2:-$work/post.lua}" "$1" | awk '/Requests\/sec/ {print $2} /Non-2xx/ {print "non-2xx answers" > "/dev/stderr"; exit 1}'; }
lat() { wrk -t1 -c1 -d10s --latency -s "${2:-$work/post.lua}" "$1" | awk '/ 50%/ {p50=$2} / 99%/ {p99=$2} END {print p50, p99}'; }

median() { tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
if [ -n "${WHARF_BEFORE:-}" ]; then
    echo "| row | this build: rps per round | median | before ($WHARF_BEFORE): rps per round | median | ratio of medians |"
    echo "|---|---|---|---|---|---|"
    for agent in ${LOAD_AGENTS:-echo warm}; do
        script="$work/post.lua"
        case "$agent" in *waf*|*default*|*crs-echo) script="$work/form.lua" ;; esac
        now="" before=""
        for _ in $(seq 1 "${LOAD_ROUNDS:-3}"); do
            now="$now $(rps "http://127.0.0.1:9002/agents/$agent" "$script")"
            before="$before $(rps "http://127.0.0.1:9003/agents/$agent" "$script")"
        done
        a=$(echo $now | median) b=$(echo $before | median)
        ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')
        echo "| $agent |$now | $a |$before | $b | $ratio |"
    done
    exit 0
fi

base_rps=$(rps http://127.0.0.1:9001/)
read -r base_p50 base_p99 < <(lat http://127.0.0.1:9001/)
echo "| server | rps at c=50 | ratio to ceiling | p50 at c=1 | p99 at c=1 |"
echo "|---|---|---|---|---|"
echo "| bare hyper echo (ceiling) | $base_rps | 1.00 | $base_p50 | $base_p99 |"
warm_rps="" chain_rps="" hdr_rps=""
for agent in ${LOAD_AGENTS:-echo ahead warm chain waf-echo default crs-echo tls-warm $old_rows}; do
    script="$work/post.lua"
    case "$agent" in *waf*|*default*|*crs-echo) script="$work/form.lua" ;; esac
    url="http://127.0.0.1:9002/agents/$agent"
    [ "$agent" = tls-warm ] && url="https://127.0.0.1:9004/agents/warm"
    r=$(rps "$url" "$script")
    read -r p50 p99 < <(lat "$url" "$script")
    ratio=$(awk -v a="$r" -v b="$base_rps" 'BEGIN {printf "%.2f", a / b}')
    case "$agent" in
        echo) label="Wharf, fresh instance per request" ;;
        ahead) label="Wharf, fresh instance per request, 4 made ahead" ;;
        warm) label="Wharf, warm pool"; warm_rps=$r ;;
        tls-warm) label="Wharf, warm pool, over HTTPS (TLS 1.3, connections kept)" ;;
        chain) label="Wharf, warm pool, headers + auth (JWT) filters"; chain_rps=$r ;;
        chain-called) label="Wharf, warm pool, headers (declare off) + auth (JWT) filters" ;;
        hdr) label="Wharf, warm pool, headers filter (declared effects)"; hdr_rps=$r ;;
        hdr-called) label="Wharf, warm pool, headers filter (declare off: every phase a call)" ;;
        waf-echo) label="Wharf, warm pool, waf (baseline rules)" ;;
        default) label="Wharf, embedded default: fresh echo, headers + waf (baseline)" ;;
        default-called) label="Wharf, embedded default with headers declare off" ;;
        crs-echo) label="Wharf, warm pool, waf (CRS 4, PL1)" ;;
        old-waf-echo) label="Wharf, warm pool, old waf engine (baseline rules)" ;;
        old-default) label="Wharf, embedded default with the old waf engine" ;;
        before-waf-echo) label="Wharf, warm pool, waf (baseline rules) at the earlier revision" ;;
        before-default) label="Wharf, embedded default with the waf at the earlier revision" ;;
        before-crs-echo) label="Wharf, warm pool, waf (CRS 4, PL1) at the earlier revision" ;;
        *) label="$agent" ;;
    esac
    echo "| $label | $r | $ratio | $p50 | $p99 |"
done
if [ -n "$chain_rps" ] && [ -n "$warm_rps" ]; then
    awk -v a="$chain_rps" -v b="$warm_rps" 'BEGIN {printf "\nheaders + auth chain / no filters (warm): %.2f\n", a / b}'
fi
if [ -n "$hdr_rps" ] && [ -n "$warm_rps" ]; then
    awk -v a="$hdr_rps" -v b="$warm_rps" 'BEGIN {printf "headers alone / no filters (warm): %.2f\n", a / b}'
fi
