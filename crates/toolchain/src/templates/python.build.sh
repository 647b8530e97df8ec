#!/usr/bin/env bash
# Builds agents/{{name}}.wasm from app.py with componentize-py 0.25.1 (taken
# from $COMPONENTIZE_PY or PATH, else installed into .venv here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
cpy="${COMPONENTIZE_PY:-}"
if [ -z "$cpy" ]; then
    if command -v componentize-py >/dev/null; then
        cpy=componentize-py
    else
        if [ ! -x .venv/bin/componentize-py ]; then
            python3 -m venv .venv
            .venv/bin/pip install -q componentize-py==0.25.1
        fi
        cpy=.venv/bin/componentize-py
    fi
fi
mkdir -p agents
"$cpy" -d wit -w agent componentize app -p . -o agents/{{name}}.wasm >/dev/null
echo "built agents/{{name}}.wasm"
