#!/usr/bin/env python3
"""Writes N distinct copies of the `tenant` agent into a directory.

Each copy has the marker `wharf-tenant:` and twelve digits in its data
rewritten to its own number, so each is a distinct component (own digest,
compile and memory image) that names itself in `x-tenant`. The copies are
`t-000000.wasm`, `t-000001.wasm`, ...; an existing copy with the right
bytes is left alone, so a warm compile cache stays warm.

usage: tenants.py TENANT_WASM DIR N
"""
import os
import sys

MARKER = b"wharf-tenant:"


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(source, "rb").read()
    at = data.find(MARKER)
    if at < 0 or data.find(MARKER, at + 1) >= 0:
        print(f"{source}: expected the marker exactly once", file=sys.stderr)
        return 1
    at += len(MARKER)
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        copy = data[:at] + b"%012d" % i + data[at + 12 :]
        path = os.path.join(out, "t-%06d.wasm" % i)
        try:
            if open(path, "rb").read() == copy:
                continue
        except FileNotFoundError:
            pass
        with open(path + ".tmp", "wb") as f:
            f.write(copy)
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
