#!/usr/bin/env bash
# Builds every Rust guest under guests/ for wasm32-wasip2 (release) and
# prints where the components are. Installs the target when it is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2
fi
cargo build --quiet --release --target wasm32-wasip2 \
    --manifest-path "$root/guests/Cargo.toml" \
    --target-dir "$root/target/guests"
echo "$root/target/guests/wasm32-wasip2/release"
