#!/usr/bin/env bash
# Builds agents/{{name}}.wasm from app.js with componentize-js (installed by
# npm from package.json on the first build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ ! -x node_modules/.bin/componentize-js ]; then
    npm install --no-audit --no-fund --loglevel=error
fi
mkdir -p agents
node_modules/.bin/componentize-js app.js --wit wit --world-name agent \
    --disable http --disable fetch-event -o agents/{{name}}.wasm >/dev/null
echo "built agents/{{name}}.wasm"
