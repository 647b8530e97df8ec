#!/usr/bin/env bash
# Replays the CRS regression cases over HTTP against a real `wharf serve`
# running the `waf` filter with the embedded OWASP CRS 4, with go-ftw's
# semantics (scripts/lib/crs_ftw.py), and prints two scores with the
# failures by rule:
#   per rule: CRS at paranoia level 4, detect mode; the rules that matched
#             each request are read from the audit log;
#   decision: CRS at paranoia level 1, enforce mode; the attack cases of
#             paranoia-level-1 rules must be blocked.
#
# scripts/conformance/crs-conformance.sh [--cases FILE] [--sample N] [--floor PCT]
#                            [--decision-floor PCT] [--bin WHARF]
# Default cases: third_party/coreruleset/tests/regression-tests.jsonl.gz. --sample N takes
# a fixed sample (by a hash of the case id); the floors make it exit 1
# when a score is below them (the test command runs a sample so). Without
# --bin it builds a release `wharf`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cases="$root/third_party/coreruleset/tests/regression-tests.jsonl.gz"
sample=0 floor=0 decision_floor=0 bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --cases) cases="$2"; shift 2 ;;
        --sample) sample="$2"; shift 2 ;;
        --floor) floor="$2"; shift 2 ;;
        --decision-floor) decision_floor="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -f "$cases" ] || { echo "no cases at $cases" >&2; exit 2; }

guests="$("$root/scripts/setup/build-guests.sh" --rust-only | tail -n 1)"
if [ -z "$bin" ]; then
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin wharf
    bin="$root/target/release/wharf"
fi

work="$(mktemp -d)"
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/agents" "$work/files"
cp "$guests/waf.wasm" "$guests/reflect.wasm" "$work/agents/"
# The regression suite's own settings (as its CI's crs-setup): the 920
# size limits set, so their rules can be tested.
cat > "$work/files/ftw.conf" <<'CONF'
SecAction "id:900005,phase:1,pass,nolog,setvar:tx.crs_validate_utf8_encoding=1,setvar:tx.arg_name_length=100,setvar:tx.arg_length=400,setvar:tx.total_arg_length=64000,setvar:tx.max_num_args=255,setvar:tx.max_file_size=64100,setvar:tx.combined_file_sizes=65535"
CONF

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run MODE PARANOIA ENGINE EXTRA-ARGS...: serves, replays, stops. Per
# rule, the engine runs detection-only (as go-ftw's CI runs it), so a
# block in one phase does not stop the rules of the later ones.
run() {
    local mode="$1" paranoia="$2" engine="$3"
    shift 3
    local port
    port="$(free_port)"
    rm -f "$work/audit.jsonl"
    cat > "$work/wharf.kdl" <<KDL
listen "127.0.0.1:$port"
agents "$work/agents"
cache "$root/target/crs-conformance-cache"
audit "$work/audit.jsonl"
filters "waf"
filter "waf" {
    mode "$mode"
    deadline "10s"
    instances { mode "warm"; max 2 }
    files "$work/files"
    config { ruleset "crs"; paranoia $paranoia; rules "ftw.conf"; response "on"; engine "$engine" }
}
KDL
    "$bin" serve --config "$work/wharf.kdl" >"$work/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
        if curl -fsS "http://127.0.0.1:$port/agents" >/dev/null 2>&1; then break; fi
        if ! kill -0 "$pid" 2>/dev/null; then cat "$work/serve.log" >&2; exit 1; fi
        sleep 0.1
    done
    local status=0
    python3 "$root/scripts/lib/crs_ftw.py" "$cases" --port "$port" --sample "$sample" "$@" || status=$?
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    pid=""
    return $status
}

status=0
run detect 4 detection-only --audit "$work/audit.jsonl" --floor "$floor" || status=1
run enforce 1 on --decision --floor "$decision_floor" || status=1
exit $status
