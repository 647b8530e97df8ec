# Sourced by the reliability and transport scripts: builds Wharf (release),
# the load driver and the Rust guests, and starts Wharf on a configuration
# in a temporary directory.
#   wharf_build           builds; sets $guests, $wharf and $load
#   wharf_start KDL       starts Wharf on that configuration text in $work,
#                         with the agents in $work/agents; sets $wharf_pid and
#                         waits until /healthz answers on $http
#   wrk_post [LUA...]     writes $work/post.lua: wrk POSTs 1 KiB bodies; each
#                         argument is one more line of Lua (a header, say)
#   load_token            prints an HS256 JWT signed with "load test secret",
#                         valid for a day (the load scripts' `auth` filter)
# The caller sets $root, $work (a temporary directory) and $http (host:port
# the configuration listens on), and copies agents into $work/agents.

wharf_build() {
    guests="$(scripts/setup/build-guests.sh --rust-only | tail -n 1)"
    cargo build --release --quiet -p wharf -p wharf-load --bin wharf --bin wharf-load
    wharf="$root/target/release/wharf"
    load="$root/target/release/wharf-load"
    mkdir -p "$work/agents"
}

wharf_start() {
    printf '%s\n' "$1" > "$work/wharf.kdl"
    "$wharf" serve --config "$work/wharf.kdl" 2>"$work/wharf.log" &
    wharf_pid=$!
    for _ in $(seq 1 200); do
        curl -fsS "http://$http/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "wharf did not start:" >&2
    cat "$work/wharf.log" >&2
    exit 1
}

# json FIELD: reads one JSON object on stdin, prints FIELD.
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

wrk_post() {
    head -c 1024 /dev/zero | tr '\0' 'x' > "$work/body"
    cat > "$work/post.lua" <<LUA
wrk.method = "POST"
local f = io.open("$work/body", "rb")
wrk.body = f:read("*a")
f:close()
LUA
    for line in "$@"; do printf '%s\n' "$line" >> "$work/post.lua"; done
}

load_token() {
    python3 - <<'PY'
import base64, hashlib, hmac, json, time
b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=")
head = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b(json.dumps({"sub": "load", "exp": int(time.time()) + 86400}).encode())
sig = b(hmac.new(b"load test secret", head + b"." + body, hashlib.sha256).digest())
print((head + b"." + body + b"." + sig).decode())
PY
}
