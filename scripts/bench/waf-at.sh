#!/usr/bin/env bash
# Builds the `waf` filter as it is at git revision REV into
# target/guests/wasm32-wasip2/release/NAME.wasm, so the benchmarks can run
# an earlier engine beside the current one in the same run
# (benches/filters.rs runs `waf-before.wasm` as its `*_before` rows).
#
#   scripts/bench/waf-at.sh REV [NAME]     NAME defaults to waf-before
#
# An existing NAME.wasm is rebuilt (a revision such as HEAD moves).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rev="${1:?usage: waf-at.sh REV [NAME]}"
name="${2:-waf-before}"
commit="$(git -C "$root" rev-parse --verify "$rev^{commit}")"
out="$root/target/guests/wasm32-wasip2/release/$name.wasm"
work="$root/target/waf-at/$name"
rm -rf "$work" && mkdir -p "$work" "$(dirname "$out")"
# Everything the policies workspace builds from (its path dependencies
# reach into third_party, the guests' WIT and the wit directory).
git -C "$root" archive "$commit" policies guests wit third_party | tar -x -C "$work"
cargo build --quiet --release --target wasm32-wasip2 -p waf \
    --manifest-path "$work/policies/Cargo.toml" --target-dir "$root/target/waf-at/build"
cp "$root/target/waf-at/build/wasm32-wasip2/release/waf.wasm" "$out"
echo "$out ($commit)"
