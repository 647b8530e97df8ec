#!/usr/bin/env bash
# Installs the pinned toolchains the non-Rust guests need, once; a no-op when
# they are present. Prints nothing on success but what it installs.
#   C:          clang, lld and wasi-libc from Debian (apt)
#   Python:     componentize-py 0.25.1 in a venv under target/toolchains
#   JavaScript: componentize-js 0.23.0 pinned by guests/js/package-lock.json (npm)
#   Go:         the machine's Go (1.24 or newer); nothing to download
# Bindings for C and Go and componentizing use `wharf` itself (no wasm-tools
# or wit-bindgen CLI to install).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="$root/target/toolchains"
mkdir -p "$tools"

componentize_py_version=0.25.1

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# C: clang with the wasm32 target, wasm-ld, wasi-libc and clang's wasm32 runtime.
if ! command -v clang >/dev/null || ! command -v wasm-ld >/dev/null \
    || [ ! -f /usr/lib/wasm32-wasi/libc.a ] \
    || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null; then
    echo "installing clang, lld and wasi-libc (apt)" >&2
    packages=(clang lld wasi-libc libclang-rt-dev-wasm32)
    export DEBIAN_FRONTEND=noninteractive
    if ! as_root apt-get install -y -q --no-install-recommends "${packages[@]}" >&2; then
        as_root apt-get update -q >&2
        as_root apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
    fi
fi

# Python: componentize-py, pinned, in Wharf's own venv.
if [ ! -x "$tools/python/bin/componentize-py" ] \
    || [ "$("$tools/python/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $componentize_py_version" ]; then
    echo "installing componentize-py $componentize_py_version (pip)" >&2
    rm -rf "$tools/python"
    python3 -m venv "$tools/python"
    "$tools/python/bin/pip" install -q --disable-pip-version-check \
        "componentize-py==$componentize_py_version" >&2
fi

# JavaScript: componentize-js, pinned by guests/js/package.json and its lock
# file, installed under target/toolchains/js. (`npm install` with the lock
# file rather than `npm ci`: npm 11's `ci` rejects this lock file over
# optional per-platform packages it lists differently.)
js_src="$root/guests/js"
js="$tools/js"
if [ ! -x "$js/node_modules/.bin/componentize-js" ] || [ ! -f "$js/.installed" ] \
    || [ "$js_src/package.json" -nt "$js/.installed" ] \
    || [ "$js_src/package-lock.json" -nt "$js/.installed" ]; then
    echo "installing componentize-js (npm)" >&2
    rm -rf "$js" && mkdir -p "$js"
    cp "$js_src/package.json" "$js_src/package-lock.json" "$js/"
    (cd "$js" && npm install --no-audit --no-fund --loglevel=error >&2)
    touch "$js/.installed"
fi

# Go: the machine's toolchain; wasip1 c-shared with go:wasmexport needs 1.24+.
if ! command -v go >/dev/null; then
    echo "Go 1.24 or newer is required for the Go guests (https://go.dev/dl)" >&2
    exit 1
fi
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
if [ "$go_minor" -lt 24 ]; then
    echo "Go 1.24 or newer is required for the Go guests; found $(go env GOVERSION)" >&2
    exit 1
fi
