#!/usr/bin/env bash
# Builds agents/{{name}}.wasm from this Rust crate (wasm32-wasip2 emits a
# component directly).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2
fi
cargo build --release --target wasm32-wasip2
mkdir -p agents
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" agents/{{name}}.wasm
echo "built agents/{{name}}.wasm"
