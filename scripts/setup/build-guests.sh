#!/usr/bin/env bash
# Builds every guest under guests/ and every policy under policies/ from
# source and prints where the Rust components are (last line). The other languages' components land in
# target/guests/lang/ as NAME-LANG.wasm (echo-c.wasm, classify-py.wasm, …).
#
# Installs what it needs: the wasm32-wasip2 Rust target, and the pinned guest
# toolchains (scripts/setup/guest-toolchains.sh). `--rust-only` builds only the
# Rust guests. A component is rebuilt only when
# one of its sources or the WIT changed. WHARF_BIN names the `wharf` binary
# to use for bindings and componentizing; without it the script builds one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2 >&2
fi
for manifest in guests/Cargo.toml policies/Cargo.toml; do
    cargo build --quiet --release --target wasm32-wasip2 \
        --manifest-path "$root/$manifest" \
        --target-dir "$root/target/guests"
done

if [ "${1:-}" = "--rust-only" ]; then
    echo "$root/target/guests/wasm32-wasip2/release"
    exit 0
fi

"$root/scripts/setup/guest-toolchains.sh"
if [ -z "${WHARF_BIN:-}" ]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p wharf --bin wharf
    WHARF_BIN="$target/debug/wharf"
fi
out="$root/target/guests/lang"
work="$root/target/guests/lang-build"
mkdir -p "$out" "$work"
wit="$root/wit"

# stale OUT INPUT...: true when OUT is missing or older than any input file.
stale() {
    local file="$1"
    shift
    [ ! -f "$file" ] || [ -n "$(find "$@" "$wit" -type f -newer "$file" -print -quit)" ]
}

build_c() { # NAME [WORLD]
    local name="$1" world="${2:-agent}" dir="$work/c-$1"
    stale "$out/$name-c.wasm" "$root/guests/c/$name.c" "$root/guests/c/wharf_guest.h" || return 0
    rm -rf "$dir" && mkdir -p "$dir"
    "$WHARF_BIN" bindgen --lang c --world "$world" --out "$dir/bindings" >/dev/null
    clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 -Wall -Wextra -Werror \
        -Wno-unused-function -Wl,--strip-debug -I "$dir/bindings" \
        "$root/guests/c/$name.c" "$dir/bindings/${world//-/_}.c" \
        "$dir/bindings/${world//-/_}_component_type.o" \
        -o "$dir/core.wasm"
    "$WHARF_BIN" componentize "$dir/core.wasm" --world "$world" --out "$out/$name-c.wasm" >/dev/null
}

build_go() { # NAME [WORLD]
    local name="$1" world="${2:-agent}" dir="$work/go-$1"
    stale "$out/$name-go.wasm" "$root/guests/go/$name" "$root/guests/go/wharfguest" \
        "$root/guests/go/wharfa2a" "$root/guests/go/wharfpeers" || return 0
    rm -rf "$dir" && mkdir -p "$dir"
    "$WHARF_BIN" bindgen --lang go --world "$world" --out "$dir" >/dev/null
    # Every exported interface is a package of the guest's own.
    cp -r "$root/guests/go/wharfguest" "$root/guests/go/$name"/export_* "$dir/"
    if [ "$world" = a2a-agent ]; then cp -r "$root/guests/go/wharfa2a" "$dir/"; fi
    if [ "$world" != filter ]; then cp -r "$root/guests/go/wharfpeers" "$dir/"; fi
    (cd "$dir" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm \
        go build -buildmode=c-shared -ldflags='-checklinkname=0 -s' -o core.wasm .)
    "$WHARF_BIN" componentize "$dir/core.wasm" --world "$world" --out "$out/$name-go.wasm" >/dev/null
}

build_py() { # NAME [WORLD]
    local name="$1" world="${2:-agent}"
    stale "$out/$name-py.wasm" "$root/guests/python/$name" "$root/guests/python/wharf_guest.py" || return 0
    "$root/target/toolchains/python/bin/componentize-py" -d "$wit" -w "$world" componentize app \
        -p "$root/guests/python/$name" -p "$root/guests/python" -o "$out/$name-py.wasm" >/dev/null
}

build_js() { # NAME [WORLD]
    local name="$1" world="${2:-agent}" js="$root/guests/js"
    stale "$out/$name-js.wasm" "$js/$name" "$js/wharf-guest.js" "$js/wharf-peers.js" || return 0
    (cd "$js" && "$root/target/toolchains/js/node_modules/.bin/componentize-js" "$name/app.js" \
        --wit "$wit" --world-name "$world" \
        --disable http --disable fetch-event -o "$out/$name-js.wasm" >/dev/null)
}

# wasi:http/proxy components (guests/wasi-http/wit, nothing of Wharf's):
# NAME-py.wasm and NAME-js.wasm; the Rust one is in the cargo workspace.
http_wit="$root/guests/wasi-http/wit"
build_http_py() { # NAME
    local name="$1"
    stale "$out/$name-py.wasm" "$root/guests/python/$name" "$http_wit" || return 0
    "$root/target/toolchains/python/bin/componentize-py" -d "$http_wit" -w http-guest \
        componentize app -p "$root/guests/python/$name" -o "$out/$name-py.wasm" >/dev/null
}

build_http_js() { # NAME
    local name="$1" js="$root/guests/js"
    stale "$out/$name-js.wasm" "$js/$name" "$http_wit" || return 0
    (cd "$js" && "$root/target/toolchains/js/node_modules/.bin/componentize-js" "$name/app.js" \
        --wit "$http_wit" --world-name http-guest -o "$out/$name-js.wasm" >/dev/null)
}

for name in echo classify; do
    build_c "$name"
    build_go "$name"
    build_py "$name"
    build_js "$name"
done
# The same filter (the `filter` world) in every language but Rust.
build_c filter filter
build_go filter filter
build_py filter filter
build_js filter filter
# The A2A agents (the `a2a-agent` world): multi-turn in Python, streaming
# in every language (Rust's are in the cargo workspace).
build_py booking a2a-agent
build_py scribe a2a-agent
build_js scribe a2a-agent
build_go scribe a2a-agent
build_c scribe a2a-agent
build_http_py http_echo
build_http_js http_echo

# WASIp3 components: the `wasip3` crate's own `http-proxy` and
# `cli-command` examples, unmodified, at the version pinned here, built from
# its crates.io source into the Rust directory as wasip3_http_proxy.wasm
# (served) and wasip3_cli_command.wasm (refused by name: not an HTTP
# handler; docs/wasi-http.md).
build_wasip3_example() {
    local version="0.10.0+wasi-0.3.2" dir="$root/target/guests/upstream"
    local built="$root/target/guests/wasm32-wasip2/release/wasip3_http_proxy.wasm"
    [ -f "$built" ] && return 0
    mkdir -p "$dir/fetch/src"
    printf '[package]\nname = "fetch-wasip3"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n[dependencies]\nwasip3 = "=%s"\n\n[workspace]\n' \
        "$version" > "$dir/fetch/Cargo.toml"
    : > "$dir/fetch/src/lib.rs"
    local source
    source="$(cargo metadata --quiet --format-version 1 --manifest-path "$dir/fetch/Cargo.toml" |
        python3 -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "wasip3"))')"
    # A copy (cargo may write the lock file beside the manifest), its own
    # workspace rather than a stray member of Wharf's.
    rm -rf "$dir/wasip3" && cp -r "$(dirname "$source")" "$dir/wasip3"
    printf '\n[workspace]\n' >> "$dir/wasip3/Cargo.toml"
    cargo build --quiet --release --target wasm32-wasip2 --example http-proxy --example cli-command \
        --manifest-path "$dir/wasip3/Cargo.toml" --target-dir "$dir/build"
    cp "$dir/build/wasm32-wasip2/release/examples/cli_command.wasm" "$(dirname "$built")/wasip3_cli_command.wasm"
    cp "$dir/build/wasm32-wasip2/release/examples/http_proxy.wasm" "$built"
}
build_wasip3_example

# A Spin component: the hello-world of `spin-sdk`'s README (Spin's Rust
# SDK 7 builds only WASIp3 components), word for word, at the version
# pinned here, into the Rust directory as spin_hello.wasm.
build_spin_example() {
    local version="7.0.0" dir="$root/target/guests/upstream/spin-hello"
    local built="$root/target/guests/wasm32-wasip2/release/spin_hello.wasm"
    [ -f "$built" ] && return 0
    mkdir -p "$dir/src"
    printf '[package]\nname = "spin-hello"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n[lib]\ncrate-type = ["cdylib"]\n\n[dependencies]\nspin-sdk = "=%s"\n\n[workspace]\n' \
        "$version" > "$dir/Cargo.toml"
    cat > "$dir/src/lib.rs" <<'RUST'
// lib.rs
use spin_sdk::http::{IntoResponse, Request};
use spin_sdk::http_service;

/// A simple Spin HTTP component.
#[http_service]
async fn hello_world(_req: Request) -> impl IntoResponse {
    "Hello, Spin"
}
RUST
    cargo build --quiet --release --target wasm32-wasip2 \
        --manifest-path "$dir/Cargo.toml" --target-dir "$root/target/guests/upstream/build"
    cp "$root/target/guests/upstream/build/wasm32-wasip2/release/spin_hello.wasm" "$built"
}
build_spin_example
echo "$root/target/guests/wasm32-wasip2/release"
