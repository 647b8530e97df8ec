#!/usr/bin/env bash
# Per-language numbers for BENCHMARKS.md: for each language, the time to
# rebuild a `wharf new` echo project after an edit to its source (toolchains
# and dependencies already installed) and its .wasm size, then the criterion
# bench `languages` (compile time, compiled size, memory per instance,
# instantiation, no-op call and 1 KiB echo, beside a native Rust echo).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
scripts/setup/build-guests.sh >/dev/null
cargo build --quiet -p wharf --bin wharf
export WHARF="${CARGO_TARGET_DIR:-$root/target}/debug/wharf"
export COMPONENTIZE_PY="$root/target/toolchains/python/bin/componentize-py"
export CARGO_TARGET_DIR="$root/target/guests"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

declare -A source=([rust]=src/lib.rs [c]=n-c.c [go]=export_wit_world/agent.go [python]=app.py [js]=app.js)
echo "| language | rebuild after an edit | .wasm size |"
echo "|---|---|---|"
for lang in rust c go python js; do
    "$WHARF" new "n-$lang" --lang "$lang" --dir "$work" >/dev/null
    project="$work/n-$lang"
    "$project/build.sh" >/dev/null 2>&1 # first build: npm install, crates, caches
    # An edit (content, not just a timestamp: Go caches by content).
    if [ "$lang" = python ]; then echo "# edit" >>"$project/${source[$lang]}"; else echo "// edit" >>"$project/${source[$lang]}"; fi
    start=$(date +%s%N)
    "$project/build.sh" >/dev/null 2>&1
    end=$(date +%s%N)
    size=$(stat -c %s "$project/agents/n-$lang.wasm")
    awk -v l="$lang" -v ns=$((end - start)) -v b="$size" \
        'BEGIN { printf "| %s | %.2f s | %.1f KiB |\n", l, ns / 1e9, b / 1024 }'
done
unset CARGO_TARGET_DIR
cargo bench -p wharf --bench languages
