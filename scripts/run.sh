#!/usr/bin/env bash
# Sets up and runs Wharf on its embedded default: installs the wasm target,
# builds the example agents (two of them A2A agents) and the shipped
# filters into ./agents, and
# serves them on 127.0.0.1:8080 (HTTP) and ./wharf.sock (the binary
# transport, MessagePack frames: docs/binary.md).
# Extra arguments go to `wharf serve` (e.g. --listen 127.0.0.1:9000).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
mkdir -p agents
cp "$guests/echo.wasm" "$guests/hello.wasm" "$guests/counter.wasm" \
    "$guests/scribe.wasm" "$guests/booking.wasm" \
    "$guests/waf.wasm" "$guests/headers.wasm" agents/
# The relay agent serves as the embedded default's topic subscriber `audit`.
cp "$guests/relay.wasm" agents/audit.wasm
cargo build --release --quiet --bin wharf
exec target/release/wharf serve --unix wharf.sock "$@"
