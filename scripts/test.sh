#!/usr/bin/env bash
# Sets up and runs every test: installs the wasm target, builds the guests
# from source, then runs the workspace's unit and integration tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/build-guests.sh >/dev/null
cargo test --workspace "$@"
