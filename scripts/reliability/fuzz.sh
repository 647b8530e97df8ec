#!/usr/bin/env bash
# Fuzzes one target with AFL++ (through cargo-afl, on stable Rust):
#   scripts/reliability/fuzz.sh TARGET SECONDS [EXECUTIONS]
# TARGET is `frame` (the binary transport's frame decoder), `config` (the
# KDL configuration parser) or `verdict` (filter verdicts and header blobs).
# Runs for SECONDS, or until EXECUTIONS executions when given (summed over
# FUZZ_JOBS parallel fuzzers, default 1, each with its share); starts from
# the committed seed corpus (fuzz/seeds/TARGET) and writes its findings to
# target/fuzz-out/TARGET. Prints the executions done and exits 1 when a
# crash or hang was found (the inputs are listed: each becomes a regression
# test). Installs cargo-afl (which builds AFL++) when it is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${1:?usage: scripts/reliability/fuzz.sh frame|config|verdict SECONDS [EXECUTIONS]}"
seconds="${2:?usage: scripts/reliability/fuzz.sh TARGET SECONDS [EXECUTIONS]}"
execs="${3:-}"
case "$target" in
    frame | config | verdict) ;;
    *) echo "unknown target '$target' (frame, config or verdict)" >&2; exit 2 ;;
esac

afl_version=0.18.2
if ! cargo afl --version 2>/dev/null | grep -q "cargo-afl $afl_version"; then
    echo "installing cargo-afl $afl_version (builds AFL++)" >&2
    cargo install --locked "cargo-afl@$afl_version" >&2
    cargo afl config --build --force >&2 || true
fi

export CARGO_TARGET_DIR="$root/target/fuzz"
(cd "$root/fuzz" && cargo afl build --release --quiet --bin "$target")

jobs="${FUZZ_JOBS:-1}"
out="$root/target/fuzz-out/$target"
rm -rf "$out"
mkdir -p "$out"
args=(-V "$seconds" -i "$root/fuzz/seeds/$target" -o "$out")
[ -n "$execs" ] && args+=(-E $(((execs + jobs - 1) / jobs)))
[ -f "$root/fuzz/dict/$target.dict" ] && args+=(-x "$root/fuzz/dict/$target.dict")
# Configuration files past 2 KiB only slow the parser's fuzzing down.
[ "$target" = config ] && args+=(-G 2048)
# A VM has no CPU frequency governor and core dumps go to a pipe: neither
# matters for in-process fuzzing.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
for n in $(seq 1 "$jobs"); do
    role=(-S "f$n")
    [ "$n" = 1 ] && role=(-M f1)
    cargo afl fuzz "${args[@]}" "${role[@]}" -- "$CARGO_TARGET_DIR/release/$target" \
        >"$out/afl-$n.log" 2>&1 &
done
failed=0
for pid in $(jobs -p); do wait "$pid" || failed=1; done
if [ "$failed" = 1 ]; then
    tail -n 30 "$out"/afl-*.log >&2
    exit 1
fi

value() { awk -F: -v k="$1" '$1 ~ "^"k" *$" { gsub(/ /, "", $2); s += $2 } END { print s + 0 }' "$out"/*/fuzzer_stats; }
crashes=$(value saved_crashes)
hangs=$(value saved_hangs)
echo "$target: $(value execs_done) executions by $jobs fuzzer(s) in $(value run_time) fuzzer-seconds" \
    "($(value execs_per_sec)/s together), $(value corpus_count) inputs in the corpora;" \
    "$crashes crashes, $hangs hangs"
if [ "$crashes" != 0 ] || [ "$hangs" != 0 ]; then
    ls "$out"/*/crashes "$out"/*/hangs >&2
    exit 1
fi
