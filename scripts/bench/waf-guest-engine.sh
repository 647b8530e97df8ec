#!/usr/bin/env bash
# The SecLang engine's own time per request, natively and compiled to wasm,
# with no filter call around it: seclang's `examples/repeat` built for this
# machine and for wasm32-wasip2, the latter run by `examples/wasm_repeat.rs`
# on wasmtime with Wharf's engine settings (epoch checks on), and again with
# epoch checks off. It separates what the guest's compiled code costs from
# what the host's filter call adds (`benches/filters.rs`, `waf/` rows).
#
#   scripts/bench/waf-guest-engine.sh [ROUNDS]
#
# WAF_CASES lists SET:FORM pairs (default "baseline:filler crs:filler
# crs:1k crs:fields"; SET and FORM as `examples/repeat.rs` takes them;
# filler is the form of `benches/filters.rs`). The wasm run reads the rule
# files as the native one does, so its runner preopens `/` read-only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-3}"
cases="${WAF_CASES:-baseline:filler crs:filler crs:1k crs:fields}"
guests="$root/target/guests"
for target in "" "--target wasm32-wasip2"; do
    # shellcheck disable=SC2086 # $target is one flag and its value, or none
    cargo build --quiet --release --example repeat -p wharf-seclang $target \
        --manifest-path "$root/policies/Cargo.toml" --target-dir "$guests"
done
# The bench profile: the dependencies `cargo bench` built are reused.
cargo build --quiet --profile bench --example wasm-repeat -p wharf --manifest-path "$root/Cargo.toml"
native="$guests/release/examples/repeat"
wasm="$guests/wasm32-wasip2/release/examples/repeat.wasm"
runner="$root/target/release/examples/wasm-repeat"

count() { # SET:FORM -> requests a run
    case "$1" in
        baseline:*) echo 5000 ;;
        *:fields | *:64k) echo 100 ;;
        *) echo 1000 ;;
    esac
}

micros() { # "NAME: 12.3µs per request, …" -> 12.3
    python3 -c '
import re, sys
m = re.search(r": ([\d.]+)(ns|µs|ms|s) per request", sys.stdin.read())
if not m:
    sys.exit("no time in the output")
scale = {"ns": 1e-3, "µs": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
print(f"{float(m.group(1)) * scale:.1f}")'
}

printf '%-6s %-16s %12s %12s %16s %8s %8s\n' round case "native µs" "wasm µs" "wasm, no epoch" "÷ native" "epoch %"
for round in $(seq "$rounds"); do
    for c in $cases; do
        set_="${c%%:*}" form="${c#*:}" n="$(count "$c")"
        a="$("$native" "$set_" "$form" "$n" | micros)"
        b="$("$runner" "$wasm" "$set_" "$form" "$n" 2> /dev/null | micros)"
        e="$(WR_EPOCH=0 "$runner" "$wasm" "$set_" "$form" "$n" 2> /dev/null | micros)"
        python3 -c "
a, b, e = $a, $b, $e
print(f'{$round:<6} {\"$c\":<16} {a:12.1f} {b:12.1f} {e:16.1f} {b / a:8.2f} {100 * (b - e) / b:8.1f}')"
    done
done
