#!/usr/bin/env bash
# What joining nodes costs and gives, on loopback (wrk 1 KiB POSTs to the
# echo agent, warm pools of 4; NATS and PostgreSQL on the same machine).
#   forwarding: p50/p99 at c=1 of echo served by the node asked vs echo
#     asked of n1 and forwarded over NATS to n2 (same run), and echo with a
#     session pinned to the node asked (its pin remembered between reads
#     of JetStream KV)
#   throughput: requests per second at c=48 into 1, 2 and 3 nodes at once
#     (one single-threaded wrk per node, the sum; and 1 node with two, to
#     tell the client's limit from the node's); every node, wrk, NATS and
#     PostgreSQL share this machine's 2 cores, which bounds what more nodes
#     give here
#   A2A SendMessage at c=1 and c=16 (scribe, a short text): tasks in
#     SQLite on one node vs in PostgreSQL through a cluster node
# LOAD_SECONDS sets each run (default 10). Prints Markdown tables.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; }
secs="${LOAD_SECONDS:-10}"
source scripts/lib/cluster.sh
source scripts/lib/serve.sh
wrk_post 'wrk.headers["content-type"] = "application/octet-stream"'
cat >"$work/a2a.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["a2a-version"] = "1.0"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"three short words"}]}}}'
LUA
cp "$work/post.lua" "$work/session.lua"
echo 'wrk.headers["x-session-id"] = "alice"' >>"$work/session.lua"

cluster_up
node_extra='agent "echo" { instances { mode "warm"; max 4; } }
agent "far" { instances { mode "warm"; max 4; } }
agent "sess" {
    instances { mode "warm"; max 4; }
    affinity { header "x-session-id"; }
}'
cluster_node n1 8181 echo scribe sess:echo
cluster_node n2 8182 echo far:echo
cluster_node n3 8183 echo
# One node without a cluster: the SQLite baseline for tasks.
mkdir -p "$work/solo/agents"
cp "$guests/scribe.wasm" "$work/solo/agents/"
printf 'listen "127.0.0.1:8184"\nagents "agents"\naudit #false\ntasks { path "tasks.db"; }\n' >"$work/solo/wharf.kdl"
(cd "$work/solo" && exec "$root/target/release/wharf" serve --config wharf.kdl) >"$work/solo.log" 2>&1 &
node_pids+=($!)
cluster_ready 8181 8182 8183 8184

lat() { # url [lua]
    wrk -t1 -c1 -d"${secs}s" --latency -s "${2:-$work/post.lua}" "$1" |
        awk '/ 50%/ {p50=$2} / 99%/ {p99=$2} /Requests\/sec/ {r=$2} END {print p50, p99, r}'
}
rps() { # connections url [lua]
    wrk -t1 -c"$1" -d"${secs}s" -s "${3:-$work/post.lua}" "$2" | awk '/Requests\/sec/ {print $2}'
}

echo "### Forwarding (c=1, ${secs} s each)"
echo
echo "| path | p50 | p99 | rps |"
echo "|---|---|---|---|"
read -r p50 p99 r < <(lat http://127.0.0.1:8181/agents/echo)
echo "| echo served by the node asked (n1) | $p50 | $p99 | $r |"
read -r p50 p99 r < <(lat http://127.0.0.1:8181/agents/far)
echo "| far asked of n1, forwarded over NATS to n2 | $p50 | $p99 | $r |"
read -r p50 p99 r < <(lat http://127.0.0.1:8181/agents/sess "$work/session.lua")
echo "| sess (pinned to n1) asked of n1: its pin remembered, read from JetStream KV every 5 s | $p50 | $p99 | $r |"
echo
echo "### Throughput into 1, 2, 3 nodes (c=48 in all, ${secs} s)"
echo
echo "| nodes asked | wrk processes | rps (sum) | ratio to 1 node, 1 wrk |"
echo "|---|---|---|---|"
one=""
spread() { # nodes wrks: wrk i asks node (i mod nodes) + 1
    local nodes="$1" wrks="$2" runs=() i
    for i in $(seq "$wrks"); do
        rps $((48 / wrks)) "http://127.0.0.1:818$(((i - 1) % nodes + 1))/agents/echo" >"$work/rps.$i" &
        runs+=($!)
    done
    wait "${runs[@]}"
    sum=$(cat $(seq -f "$work/rps.%g" 1 "$wrks") | awk '{s += $1} END {printf "%.0f", s}')
    [ -z "$one" ] && one=$sum
    echo "| $nodes | $wrks | $sum | $(awk -v a="$sum" -v b="$one" 'BEGIN {printf "%.2f", a / b}') |"
}
spread 1 1
spread 1 2
spread 2 2
spread 3 3
echo
echo "### A2A SendMessage (scribe, blocking until completed, ${secs} s each)"
echo
echo "| task store | p50 at c=1 | p99 at c=1 | rps at c=16 |"
echo "|---|---|---|---|"
read -r p50 p99 _ < <(lat http://127.0.0.1:8184/a2a/scribe "$work/a2a.lua")
r=$(rps 16 http://127.0.0.1:8184/a2a/scribe "$work/a2a.lua")
echo "| SQLite, one node | $p50 | $p99 | $r |"
read -r p50 p99 _ < <(lat http://127.0.0.1:8181/a2a/scribe "$work/a2a.lua")
r=$(rps 16 http://127.0.0.1:8181/a2a/scribe "$work/a2a.lua")
echo "| PostgreSQL, cluster node | $p50 | $p99 | $r |"
