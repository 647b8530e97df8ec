#!/usr/bin/env bash
# Smoke test: builds the agent, serves ./agents with `wharf serve` on a free
# port, sends one request and checks the answer (the echo returns the body;
# change the check when the agent stops being an echo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./build.sh
wharf="${WHARF:-wharf}"
log="$(mktemp)"
"$wharf" serve --agents agents --listen 127.0.0.1:0 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
addr=""
# A first start compiles the component (a minute or more for Python and
# JavaScript on a busy machine); later starts use the compile cache.
for _ in $(seq 1 1800); do
    addr="$(sed -n 's/.* listening addr=\([0-9.:]*\).*/\1/p' "$log" | head -n 1)"
    [ -n "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$addr" ] || { echo "wharf did not start" >&2; cat "$log" >&2; exit 1; }
reply="$(curl -sS -d 'ping' "http://$addr/agents/{{name}}/")"
if [ "$reply" != "ping" ]; then
    echo "FAIL: expected 'ping', got '$reply'" >&2
    exit 1
fi
echo "ok: {{name}} answered"
