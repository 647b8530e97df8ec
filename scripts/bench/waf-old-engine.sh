#!/usr/bin/env bash
# Builds the `waf` filter as it was before Wharf's own SecLang engine (the
# zentinel-modsec 0.5.0 engine, commit bfbffe4) into
# target/guests/wasm32-wasip2/release/waf-zentinel.wasm, so the benchmarks can run it beside
# the current one in the same run (benches/filters.rs, scripts/bench/load.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
commit=bfbffe4
out="$root/target/guests/wasm32-wasip2/release/waf-zentinel.wasm"
[ -f "$out" ] && { echo "$out"; exit 0; }
work="$root/target/waf-old-engine"
rm -rf "$work" && mkdir -p "$work"
git -C "$root" archive "$commit" policies guests wit | tar -x -C "$work"
cargo build --quiet --release --target wasm32-wasip2 -p waf \
    --manifest-path "$work/policies/Cargo.toml" --target-dir "$root/target/guests-old"
cp "$root/target/guests-old/wasm32-wasip2/release/waf.wasm" "$out"
echo "$out"
