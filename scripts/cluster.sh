#!/usr/bin/env bash
# Starts NATS (with JetStream), PostgreSQL and three Wharf nodes on
# loopback, each serving some of the example agents, and asks every node
# for an agent that lives on another one: the answer names the node that
# gave it (x-wharf-node). Then an A2A task made on one node is read on
# another (tasks live in PostgreSQL). Then it keeps serving until Ctrl-C.
#   nodes: n1 127.0.0.1:8181 (echo, hello)   n2 :8182 (counter, scribe)
#          n3 :8183 (echo, counter, scribe)
# Set WHARF_CLUSTER_ONCE=1 to stop after the printout; WHARF_NATS_PORT
# and WHARF_PG_PORT move NATS (4222) and PostgreSQL (5433).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/lib/cluster.sh

cluster_up
node_extra='agent "counter" {
    instances { mode "warm"; max 2; }
    affinity { header "x-session-id"; }
}'
cluster_node n1 8181 echo hello
cluster_node n2 8182 counter scribe
cluster_node n3 8183 echo counter scribe
cluster_ready 8181 8182 8183

ask() { # port agent
    curl -s -D - -o "$work/body" -d "hi from :$1" -H 'x-session-id: alice' \
        "http://127.0.0.1:$1/agents/$2" | tr -d '\r' | grep -i '^x-wharf-node' | sed "s/^/:$1 -> $2: /"
    echo "    $(head -c 120 "$work/body")"
}
ask 8181 counter
ask 8182 hello
ask 8183 hello
ask 8181 counter
ask 8183 scribe
echo
rpc() { # port method params
    curl -s "http://127.0.0.1:$1/a2a/scribe" -H 'a2a-version: 1.0' \
        -H 'content-type: application/json' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$3}"
}
task="$(rpc 8182 SendMessage '{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"kept in PostgreSQL"}]}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["task"]["id"])')"
echo "A2A task $task made on :8182, read on :8183:"
rpc 8183 GetTask "{\"id\":\"$task\"}" | python3 -c '
import json, sys
t = json.load(sys.stdin)["result"]
chunks = "".join(p.get("text", "") for a in t.get("artifacts", []) for p in a["parts"])
print("    " + t["status"]["state"] + ": " + chunks.strip())'
echo
curl -s http://127.0.0.1:8181/cluster
echo
[ "${WHARF_CLUSTER_ONCE:-0}" = 1 ] && exit 0
echo "serving (logs in $work); Ctrl-C stops"
wait
