#!/usr/bin/env bash
# Builds the `waf` filter as it is at git revision REV into
# target/guests/wasm32-wasip2/release/NAME.wasm (scripts/bench/policy-at.sh
# for the waf policy).
#
#   scripts/bench/waf-at.sh REV [NAME]     NAME defaults to waf-before
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/policy-at.sh" waf "${1:?usage: waf-at.sh REV [NAME]}" "${2:-waf-before}"
