#!/usr/bin/env bash
# Builds agents/{{name}}.wasm from {{name}}.c: `wharf bindgen` writes the C
# bindings, clang (wasm32-wasi, reactor) compiles, `wharf componentize` makes
# the component. Needs clang, lld and wasi-libc
# (Debian: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
wharf="${WHARF:-wharf}"
rm -rf build && mkdir -p build agents
"$wharf" bindgen --lang c --out build/bindings >/dev/null
clang --target=wasm32-wasi --sysroot="${WASI_SYSROOT:-/usr}" -mexec-model=reactor -O2 \
    -Wall -Wextra -Wno-unused-function -Wl,--strip-debug -I build/bindings \
    {{name}}.c build/bindings/agent.c build/bindings/agent_component_type.o -o build/core.wasm
"$wharf" componentize build/core.wasm --out agents/{{name}}.wasm >/dev/null
echo "built agents/{{name}}.wasm"
