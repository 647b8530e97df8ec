#!/usr/bin/env bash
# Runs PostgreSQL for a Wharf cluster's shared A2A tasks on 127.0.0.1:PORT,
# in the foreground, with a throwaway cluster under DIR (made when missing:
# trust authentication on loopback, superuser `wharf`, database
# `postgres`): the URL is postgres://wharf@127.0.0.1:PORT/postgres. Installs
# Debian's postgresql package when no server is installed. As root, the
# server runs as the `postgres` user (it refuses root). Stop it with
# SIGINT or SIGTERM. Usage: postgres.sh DIR PORT
set -euo pipefail
dir="$1" port="$2"
server_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin="$(server_bin)"
if [ -z "$bin" ]; then
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    echo "installing postgresql (apt)" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null 2>&1 ||
        { $sudo apt-get update -q >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }
    bin="$(server_bin)"
fi
as=()
mkdir -p "$dir"
if [ "$(id -u)" = 0 ]; then
    as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    chown postgres: "$dir"
fi
chmod 700 "$dir"
if [ ! -f "$dir/PG_VERSION" ]; then
    "${as[@]}" "$bin/initdb" -D "$dir" -A trust -U wharf -E UTF8 --no-sync >/dev/null
fi
exec "${as[@]}" "$bin/postgres" -D "$dir" -p "$port" -k "$dir" \
    -c listen_addresses=127.0.0.1 -c max_connections=200 -c logging_collector=off
