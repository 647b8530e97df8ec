#!/usr/bin/env bash
# A 1 MiB request body through a filter that reads it in pieces and
# decides on the first 8 KiB (guests/filters/sniff), beside no filter and a
# filter that reads it whole (guests/filters/probe, asked for the body), in
# front of the wasi:http echo (guests/http-echo), which reads the body as
# it arrives and writes each piece back at once: the answer's first byte
# is the agent's first byte. A Python client on loopback (the body in
# 64 KiB writes while it waits for the answer), warm instances, BODY_RUNS
# (200) requests a row; prints the median and p90 of
# the time to the first byte of the answer, the median of the whole
# exchange, in ms, and the first byte's ratio to no filter. With
# WHARF_BEFORE (a `wharf` binary of the commit before) the same rows on it
# too, in the same run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
runs="${BODY_RUNS:-200}"
http=127.0.0.1:9112
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
cargo build --release --quiet -p wharf --bin wharf
binaries=("$root/target/release/wharf")
[ -n "${WHARF_BEFORE:-}" ] && binaries+=("$WHARF_BEFORE")
mkdir -p "$work/agents"
for agent in plain pieces whole; do cp "$guests/http_echo.wasm" "$work/agents/$agent.wasm"; done
cp "$guests/sniff.wasm" "$work/agents/sniff.wasm"
cp "$guests/probe.wasm" "$work/agents/probe.wasm"
head -c $((1 << 20)) /dev/zero | tr '\0' 'x' > "$work/body"
cat > "$work/wharf.kdl" <<KDL
listen "$http"
agents "$work/agents"
audit #false
instances { mode "warm"; max 2; }
filter "sniff" { instances { mode "warm"; max 2; }; }
filter "probe" { instances { mode "warm"; max 2; }; }
agent "plain" { filters #false; }
agent "pieces" { filters "sniff"; }
agent "whole" { filters "probe"; }
KDL

# stats AGENT: "p50-first p90-first p50-total" in ms over $runs requests,
# each on a new connection: the head, then the body in 64 KiB writes from
# a second thread, timed from the first byte sent to the first byte of the
# answer and to its end.
cat > "$work/ttfb.py" <<'PY'
import socket, sys, threading, time
host, port, path, body_file, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
body = open(body_file, "rb").read()
head = (f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: {len(body)}\r\n"
        "x-probe-probe: rh:want-body\r\nconnection: close\r\n\r\n").encode()
for _ in range(runs):
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def upload():
        s.sendall(head)
        for at in range(0, len(body), 65536):
            s.sendall(body[at:at + 65536])
    started = time.perf_counter()
    t = threading.Thread(target=upload)
    t.start()
    first = s.recv(65536)
    got_first = time.perf_counter()
    assert first.startswith(b"HTTP/1.1 200"), first[:200]
    while s.recv(1 << 20):
        pass
    ended = time.perf_counter()
    t.join()
    s.close()
    print(f"{(got_first - started) * 1000:.3f} {(ended - started) * 1000:.3f}")
PY
stats() {
    python3 "$work/ttfb.py" "${http%:*}" "${http#*:}" "/agents/$1/" "$work/body" "$runs" > "$work/times"
    local n
    n=$(wc -l < "$work/times")
    printf '%s %s %s\n' \
        "$(cut -d' ' -f1 "$work/times" | sort -n | sed -n "$((n / 2))p")" \
        "$(cut -d' ' -f1 "$work/times" | sort -n | sed -n "$((n * 9 / 10))p")" \
        "$(cut -d' ' -f2 "$work/times" | sort -n | sed -n "$((n / 2))p")"
}

echo "| build | filter | first byte p50 (ms) | p90 | whole exchange p50 (ms) | first byte × no filter |"
echo "|---|---|---|---|---|---|"
for bin in "${binaries[@]}"; do
    RUST_LOG=warn "$bin" serve --config "$work/wharf.kdl" >"$work/wharf.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do curl -sf -o /dev/null "http://$http/healthz" && break; sleep 0.1; done
    for agent in plain pieces whole; do stats "$agent" >/dev/null; done # warm-up
    label=$([ "$bin" = "${binaries[0]}" ] && echo this || echo before)
    base=""
    for agent in plain pieces whole; do
        read -r p50 p90 total < <(stats "$agent")
        [ -z "$base" ] && base=$p50
        case $agent in
            plain) what="none" ;;
            pieces) what="sniff: in pieces, decides on the first 8 KiB" ;;
            whole) what="probe: the body whole" ;;
        esac
        ratio=$(awk -v a="$p50" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
        echo "| $label | $what | $p50 | $p90 | $total | $ratio |"
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
done
