#!/usr/bin/env bash
# Soak: SOAK_SECONDS (default 600) of mixed traffic, HTTP and the binary
# transport, fresh (`echo`) and warm (`counter`, sessions pinned) agents,
# with fault fixtures mixed in (`trap`: 500; `spin`, cut off at its 100 ms
# deadline: 504; either 503 while its breaker is open), RSS sampled every 10 s. Unexpected answers (anything but
# those statuses) are errors. Prints every sample, then the load per
# stream and the RSS growth after warm-up (the first minute, or the
# first sixth of a shorter run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seconds="${SOAK_SECONDS:-600}"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
http=127.0.0.1:9014
. scripts/lib/serve.sh
wharf_build
for g in echo counter; do cp "$guests/$g.wasm" "$work/agents/"; done
for g in trap spin; do cp "$guests/$g.wasm" "$work/agents/"; done
wharf_start "listen \"$http\"
agents \"agents\"
audit #false
binary { unix \"$work/w.sock\" }
agent \"counter\" {
    instances { mode \"warm\"; max 4 }
    affinity { header \"x-session-id\" }
}
agent \"spin\" { deadline \"100ms\"; retries 0 }
agent \"trap\" { retries 0 }"

"$load" soak --pid "$wharf_pid" --http "$http" --unix "$work/w.sock" \
    --seconds "$seconds" --sample 10 | tee "$work/soak.jsonl"
python3 - "$work/soak.jsonl" "$seconds" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
seconds = int(sys.argv[2])
samples = [r for r in rows if "rss" in r]
streams = [r for r in rows if "name" in r]
warm = min(60, seconds // 6)
after = [s for s in samples if s["t"] >= warm]
base, last = after[0]["rss"], samples[-1]["rss"]
print("\n| stream | requests | rps | p50 | p99 | unexpected |")
print("|---|---|---|---|---|---|")
for s in streams:
    print(f"| {s['name']} | {s['requests']:,} | {s['rps']:,.0f} | {s['p50_us']/1000:.2f} ms | {s['p99_us']/1000:.2f} ms | {s['errors']} |")
errors = sum(s["errors"] for s in streams)
print(f"\nRSS after warm-up (t={after[0]['t']} s): {base/2**20:.1f} MiB; at the end (t={samples[-1]['t']} s): "
      f"{last/2**20:.1f} MiB; growth {(last-base)/2**20:+.2f} MiB; max {max(s['rss'] for s in after)/2**20:.1f} MiB")
print(f"unexpected answers: {errors}")
PY
