#!/usr/bin/env bash
# Counts the instructions and L1 data-read misses the SecLang engine spends
# per request, natively, under valgrind's cachegrind: a figure that does
# not move with the VM's load (the time of a shared 2-core VM moves by a
# third between rounds), for comparing two revisions of the engine. Each
# revision's `examples/repeat` runs the workload 1 and 401 times; the
# difference over 400 is one request's cost, without the rule set's load
# (whose own count moves by about 0.5 M between runs with its hash maps'
# random seeds: over 400 requests, about 1,000 instructions a request).
#
#   scripts/bench/waf-instructions.sh [REV] [SET] [FORM]
#
# REV (default HEAD) is built from git beside the working tree; SET is crs
# or baseline (default crs), FORM filler, 1k, 64k or fields (default
# filler, the form of `benches/filters.rs`). Needs valgrind.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rev="${1:-HEAD}"
set_="${2:-crs}"
form="${3:-filler}"
command -v valgrind > /dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
commit="$(git -C "$root" rev-parse --verify "$rev^{commit}")"
work="$root/target/waf-instructions/src"
rm -rf "$work" && mkdir -p "$work"
git -C "$root" archive "$commit" policies third_party guests wit | tar -x -C "$work"
# The example may be newer than REV: run REV's engine through this tree's.
cp "$root/policies/seclang/examples/repeat.rs" "$work/policies/seclang/examples/repeat.rs"

build() { # manifest target-dir -> the example's path
    cargo build --quiet --release --example repeat -p wharf-seclang \
        --manifest-path "$1" --target-dir "$2"
    echo "$2/release/examples/repeat"
}

per_request() { # binary
    for n in 1 401; do
        valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
            "$1" "$set_" "$form" "$n" 2>&1 > /dev/null | grep -E 'I +refs|D1 +misses'
    done | python3 -c '
import re, sys
nums = [int(re.search(r"(?:refs|misses):\s*([\d,]+)(?:\s*\(\s*([\d,]+) rd)?", l).group(g).replace(",", ""))
        for l in sys.stdin for g in ((1,) if "refs" in l else (2,))]
i1, d1, i2, d2 = nums
print(f"{(i2 - i1) / 400:,.0f} instructions, {(d2 - d1) / 400:,.0f} L1 data-read misses a request")'
}

before="$(build "$work/policies/Cargo.toml" "$root/target/waf-instructions/build")"
after="$(build "$root/policies/Cargo.toml" "$root/target/policies-native")"
echo "$set_ $form, ${rev} (${commit:0:7}): $(per_request "$before")"
echo "$set_ $form, working tree:  $(per_request "$after")"
