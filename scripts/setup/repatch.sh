#!/usr/bin/env bash
# Re-makes a patched third-party crate under third_party/ from its
# published release plus the carried diffs, so that taking an upstream
# (security) release is one command and a review of `git diff`:
#
#   scripts/setup/repatch.sh CRATE [VERSION]
#
# CRATE is a folder of third_party/ that carries a crate (wasmtime,
# async-nats, libinjectionrs). Without VERSION it only checks: the version
# carried now, re-made, must give back the same files (the folder is what
# its PATCHED.md says); with VERSION it writes the re-made folder. The release is fetched by cargo
# from the package registry; the files the folder carries now (its
# PATCHED.md and *.diff aside) are replaced with the release's, the
# manifest loses the targets whose files are not carried, and every
# *.diff is applied with `patch -p1` (the script stops if one does not
# apply: the diff must then be redone against the new release).
#
# For wasmtime, the workspace follows: its `wasmtime = "=OLD"` pin (in
# Cargo.toml and fuzz/Cargo.toml) becomes the new version, Cargo.lock takes
# the crates the release pins, and the other wasmtime crates go to the
# newest release of the line, so that `it::repository` holds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
crate="${1:?usage: scripts/setup/repatch.sh CRATE [VERSION]}"
dir="$root/third_party/$crate"
[ -f "$dir/Cargo.toml" ] && [ -f "$dir/PATCHED.md" ] ||
    { echo "third_party/$crate is not a carried, patched crate" >&2; exit 2; }
old="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$dir/Cargo.toml" | head -n 1)"
version="${2:-$old}"
check=$([ $# -lt 2 ] && echo 1 || echo 0)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Fetch the release through cargo: a throwaway package that depends on it.
mkdir -p "$work/fetch/src"
: > "$work/fetch/src/lib.rs"
cat > "$work/fetch/Cargo.toml" <<TOML
[package]
name = "repatch-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$crate = { version = "=$version", default-features = false }
TOML
cargo fetch --quiet --manifest-path "$work/fetch/Cargo.toml"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
archive="$(find "$cargo_home/registry/cache" -name "$crate-$version.crate" -print -quit)"
[ -n "$archive" ] || { echo "cargo fetched no $crate-$version.crate" >&2; exit 1; }
tar -xzf "$archive" -C "$work"
release="$work/$crate-$version"

# The new tree: what the folder carries now, taken from the release.
new="$work/new"
mkdir -p "$new"
for entry in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$entry" ] || continue
    name="$(basename "$entry")"
    case "$name" in
        PATCHED.md | *.diff) cp -R "$entry" "$new/" ;;
        *)
            if [ -e "$release/$name" ]; then
                cp -R "$release/$name" "$new/"
            else
                # Carried from the upstream repository (a license file
                # the published crate lacks): kept; check it is current.
                echo "kept: $name ($crate $version does not publish it)" >&2
                cp -R "$entry" "$new/"
            fi
            ;;
    esac
done

# The manifest: targets whose files are not carried are dropped (the
# release's tests, benches and examples) with the dev-dependencies, and so
# is the build script when it is not carried.
python3 - "$new" <<'PY'
import os, re, sys
new = sys.argv[1]
path = os.path.join(new, "Cargo.toml")
lines = open(path).read().split("\n")
sections, cur = [], ["", []]
for line in lines:
    if re.match(r"^\[\[?[^\]]+\]\]?\s*$", line):
        sections.append(cur)
        cur = [line, [line]]
    else:
        cur[1].append(line)
sections.append(cur)
out = []
for head, body in sections:
    target = re.match(r"^\[\[(test|bench|example|bin)\]\]", head)
    if target:
        paths = [m.group(1) for l in body for m in [re.match(r'^path = "(.*)"', l)] if m]
        if paths and not all(os.path.exists(os.path.join(new, p)) for p in paths):
            continue
    if re.match(r"^\[(target\..*\.)?dev-dependencies", head):
        continue  # the release's tests are not carried, nor what they need
    out.append(body)
text = "\n".join("\n".join(b) for b in out)
build = re.search(r'^build = "(.*)"$', text, re.M)
if build and not os.path.exists(os.path.join(new, build.group(1))):
    text = text.replace(build.group(0) + "\n", "")
    build = None
if not build and not os.path.exists(os.path.join(new, "build.rs")):
    # No build script carried: nor what it needs.
    text = re.sub(r"\n\[(target\.[^\]]*\.)?build-dependencies[^\n]*\n(?:(?!\[)[^\n]*\n)*", "\n", text)
open(path, "w").write(text)
PY

for diff in "$new"/*.diff; do
    [ -e "$diff" ] || continue
    (cd "$new" && patch -p1 --quiet --no-backup-if-mismatch < "$diff") ||
        { echo "$(basename "$diff") does not apply to $crate $version: redo it against this release" >&2; exit 1; }
done

if diff -r -q "$dir" "$new" >/dev/null; then
    echo "third_party/$crate is $crate $version plus its diffs, unchanged"
    exit 0
fi
if [ "$check" = 1 ]; then
    echo "third_party/$crate differs from $crate $version plus its diffs:" >&2
    diff -r -u "$new" "$dir" | head -n 60 >&2
    exit 1
fi
rm -rf "$dir"
mv "$new" "$dir"
echo "third_party/$crate: $crate $old -> $version, diffs applied"

if [ "$crate" = wasmtime ] && [ "$version" != "$old" ]; then
    for manifest in "$root/Cargo.toml" "$root/fuzz/Cargo.toml"; do
        [ -f "$manifest" ] || continue
        sed -i -E "/^wasmtime *=/ s/\"=$old\"/\"=$version\"/" "$manifest"
    done
    # Resolving again moves the crates the copy pins (wasmtime-environ,
    # the internal crates, Cranelift, Pulley) to its release; the
    # workspace's other wasmtime crates go to the newest release of the
    # line (a patch release publishes only the crates it changes).
    cargo metadata --quiet --format-version 1 --manifest-path "$root/Cargo.toml" >/dev/null
    cargo update --quiet --manifest-path "$root/Cargo.toml" \
        -p wasmtime-wasi -p wasmtime-wasi-http -p wasmtime-wasi-io -p wasmtime-wizer \
        -p wasi-preview1-component-adapter-provider
    echo "Cargo.lock follows wasmtime $version; review PATCHED.md's figures and re-run the runtime tests"
fi
