#!/usr/bin/env bash
# Builds the `waf` filter with wasm SIMD (`-C target-feature=+simd128`:
# memchr, aho-corasick and the regex engine's prefilters use it) into
# target/guests/wasm32-wasip2/release/waf-simd.wasm, so benches/filters.rs
# can run it beside the default build in the same run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="-C target-feature=+simd128" \
    cargo build --quiet --release --target wasm32-wasip2 -p waf \
    --manifest-path "$root/policies/Cargo.toml" --target-dir "$root/target/guests-simd"
out="$root/target/guests/wasm32-wasip2/release/waf-simd.wasm"
cp "$root/target/guests-simd/wasm32-wasip2/release/waf.wasm" "$out"
echo "$out"
