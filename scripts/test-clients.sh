#!/usr/bin/env bash
# Installs the real clients the tests drive Wharf with, once; a no-op when
# they are present. Prints nothing on success but what it installs.
#   A2A: the official Python SDK (`a2a-sdk`, pinned) in a venv under
#        target/toolchains/a2a-client
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/toolchains/a2a-client"
a2a_sdk_version=1.3.0

if [ ! -x "$venv/bin/python" ] \
    || [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))' 2>/dev/null)" != "$a2a_sdk_version" ]; then
    echo "installing a2a-sdk $a2a_sdk_version (pip)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "a2a-sdk==$a2a_sdk_version" >&2
fi
