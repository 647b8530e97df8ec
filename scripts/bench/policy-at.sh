#!/usr/bin/env bash
# Builds the policy POLICY (a package of policies/: waf, auth, headers) as
# it is at git revision REV into target/guests/wasm32-wasip2/release/NAME.wasm,
# so the benchmarks can run an earlier version beside the current one in
# the same run (benches/filters.rs runs `waf-before.wasm` and
# `auth-before.wasm` as its `*_before` rows).
#
#   scripts/bench/policy-at.sh POLICY REV [NAME]     NAME defaults to POLICY-before
#
# An existing NAME.wasm is rebuilt (a revision such as HEAD moves).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
policy="${1:?usage: policy-at.sh POLICY REV [NAME]}"
rev="${2:?usage: policy-at.sh POLICY REV [NAME]}"
name="${3:-$policy-before}"
commit="$(git -C "$root" rev-parse --verify "$rev^{commit}")"
out="$root/target/guests/wasm32-wasip2/release/$name.wasm"
work="$root/target/policy-at/$name"
rm -rf "$work" && mkdir -p "$work" "$(dirname "$out")"
# Everything the policies workspace builds from (its path dependencies
# reach into third_party, the guests' WIT and the wit directory).
git -C "$root" archive "$commit" policies guests wit third_party | tar -x -C "$work"
cargo build --quiet --release --target wasm32-wasip2 -p "$policy" \
    --manifest-path "$work/policies/Cargo.toml" --target-dir "$root/target/policy-at/build"
cp "$root/target/policy-at/build/wasm32-wasip2/release/$policy.wasm" "$out"
echo "$out ($commit)"
