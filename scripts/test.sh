#!/usr/bin/env bash
# Sets up and runs every test: installs the wasm target, builds the guests
# from source, installs the real clients and servers the tests use (the
# A2A SDKs, NATS, PostgreSQL), then runs the workspace's unit and
# integration tests.
#
# scripts/test.sh --quick: the contributor's loop (a few minutes once
# built): every crate's unit tests, the golden configuration tests, the
# repository's own checks, the guest library's and the WAF engine's tests;
# no guest toolchains, no guests, no integration suite, no installs.
# docs/testing.md says what each part of the full command costs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ "${1:-}" = "--quick" ]; then
    shift
    cargo test --quiet --workspace --exclude wharf "$@"
    cargo test --quiet -p wharf --lib --bins "$@"
    cargo test --quiet -p wharf --test it "$@" -- config_golden:: repository::
    cargo test --quiet --manifest-path guests/Cargo.toml -p wharf-guest --target-dir target/guests-native
    cargo test --quiet --manifest-path policies/Cargo.toml -p wharf-seclang --target-dir target/policies-native
    exit 0
fi
# Each part is timed on stderr (docs/testing.md lists what they take).
part() { printf '== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
# Debian packages: the PostgreSQL server the cluster tests keep shared
# tasks in (each test runs its own on loopback, with a throwaway data
# directory), and curl.
apt_install() {
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 ||
        { $sudo apt-get update -q >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
}
part "system packages"
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || apt_install postgresql
# curl with HTTP/2, the client the HTTPS listener's tests use beside hyper.
command -v curl >/dev/null || apt_install curl
part "guests and their toolchains"
scripts/setup/build-guests.sh >/dev/null
part "test clients"
# The real clients the tests drive Wharf with (the official A2A SDK).
scripts/setup/test-clients.sh
part "guest library tests"
# The guest library's own tests (natively: its decoders of what the host sends).
cargo test --quiet --manifest-path guests/Cargo.toml -p wharf-guest --target-dir target/guests-native
# The WAF engine's own tests (natively), then a fixed sample of the CRS
# regression suite over HTTP against a real `wharf serve`, with floors.
part "WAF engine tests"
cargo test --quiet --manifest-path policies/Cargo.toml -p wharf-seclang --target-dir target/policies-native
part "CRS conformance sample"
scripts/conformance/crs-conformance.sh --sample 400 --floor 98 --decision-floor 94 --bin "$root/target/debug/wharf"
part "workspace tests (unit and integration)"
cargo test --workspace "$@"
part "done"
