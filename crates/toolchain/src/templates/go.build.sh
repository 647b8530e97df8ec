#!/usr/bin/env bash
# Builds agents/{{name}}.wasm with stock Go (GOOS=wasip1): `wharf bindgen`
# writes the Go bindings and their support package into build/, your
# packages are copied beside them, `go build` makes a reactor module and
# `wharf componentize` the component. Needs Go 1.24 or newer.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
wharf="${WHARF:-wharf}"
rm -rf build && mkdir -p build agents
"$wharf" bindgen --lang go --out build/go >/dev/null
cp -r export_wit_world wharfguest wharfpeers build/go/
(cd build/go && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm \
    go build -buildmode=c-shared -ldflags='-checklinkname=0 -s' -o ../core.wasm .)
"$wharf" componentize build/core.wasm --out agents/{{name}}.wasm >/dev/null
echo "built agents/{{name}}.wasm"
