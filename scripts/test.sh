#!/usr/bin/env bash
# Sets up and runs every test: installs the wasm target, builds the guests
# from source, installs the real clients the tests use (the A2A SDK),
# then runs the workspace's unit and integration tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The WAF tests load the OWASP Core Rule Set as Debian packages it.
if [ ! -d /usr/share/modsecurity-crs/rules ]; then
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get install -y -q modsecurity-crs >/dev/null 2>&1 ||
        { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q modsecurity-crs >/dev/null; }
fi
scripts/build-guests.sh >/dev/null
# The real clients the tests drive Wharf with (the official A2A SDK).
scripts/test-clients.sh
cargo test --workspace "$@"
