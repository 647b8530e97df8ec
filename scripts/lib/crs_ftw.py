#!/usr/bin/env python3
"""Replays CRS regression cases (the JSON-lines format of
third_party/coreruleset/tests/regression-tests.jsonl.gz) over HTTP against a running
`wharf serve`, with go-ftw's semantics, and prints the score and the
failures by rule. Used by scripts/conformance/crs-conformance.sh, which starts the
server; standard library only.

Per-rule mode (--audit FILE): the server runs the WAF in detect mode at
paranoia level 4; the rules that matched a request are read from the
audit log by its x-request-id. A case passes when every id in expect_ids
matched and none of no_expect_ids did; a case with no ids is scored on
its expected status when it has one, and is not scored when it only
checks log text. Decision mode (--decision): the attack cases of
paranoia-level-1 rules must be blocked by the WAF (its JSON `blocked`
answer), at paranoia level 1 in enforce mode.

Every request goes to the agent `reflect` (/agents/reflect + the case's
URI), one connection per request, bytes as the case gives them.
"""

import argparse
import base64
import collections
import gzip
import hashlib
import json
import socket
import sys
import time

AGENT = "/agents/reflect"


def load(path, sample, only):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    if only:
        cases = [c for c in cases if c["id"].startswith(only)]
    if sample:
        # A fixed sample: the cases whose id hashes lowest.
        cases.sort(key=lambda c: hashlib.sha256(c["id"].encode()).hexdigest())
        cases = cases[:sample]
        cases.sort(key=lambda c: c["id"])
    return cases


def routed(uri):
    """The case's URI below the agent; None when it cannot be routed
    (absolute form, `*`, a backslash path)."""
    if uri.startswith("/"):
        return AGENT + uri
    return None


def raw_bytes(case):
    """The request as bytes, or None when it cannot reach the agent."""
    if case.get("raw_request_b64"):
        raw = base64.b64decode(case["raw_request_b64"])
        line, sep, rest = raw.partition(b"\r\n")
        parts = line.split(b" ")
        if len(parts) < 2:
            return None
        target = routed(parts[1].decode("latin-1"))
        if target is None:
            return None
        parts[1] = target.encode("latin-1")
        return b" ".join(parts) + sep + rest
    target = routed(case.get("uri") or "")
    if target is None:
        return None
    body = (case.get("body") or "").encode("utf-8")
    headers = [(h[0], h[1]) for h in case.get("headers") or []]
    names = {n.lower() for n, _ in headers}
    if case.get("autocomplete_headers"):
        if body and "content-length" not in names and "transfer-encoding" not in names:
            headers.append(("Content-Length", str(len(body))))
        if "connection" not in names:
            headers.append(("Connection", "close"))
    version = case.get("version")
    version = "HTTP/1.1" if version is None else version
    line = f"{case['method']} {target} {version}".rstrip(" ")
    head = line + "\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n"
    return head.encode("utf-8") + body


def send(host, port, data, timeout):
    """Sends one request; returns (status, x-request-id, body, content
    type) or None."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        chunks = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
                if response_complete(b"".join(chunks)):
                    break
        except (socket.timeout, ConnectionResetError):
            pass
    resp = b"".join(chunks)
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ")[1])
    except (IndexError, ValueError):
        return None
    rid = ctype = ""
    for l in lines[1:]:
        n, _, v = l.partition(b":")
        if n.strip().lower() == b"x-request-id":
            rid = v.strip().decode()
        elif n.strip().lower() == b"content-type":
            ctype = v.strip().decode("latin-1")
    return status, rid, body, ctype


def response_complete(resp):
    head, sep, body = resp.partition(b"\r\n\r\n")
    if not sep:
        return False
    for l in head.split(b"\r\n")[1:]:
        n, _, v = l.partition(b":")
        if n.strip().lower() == b"content-length":
            return len(body) >= int(v.strip() or 0)
        if n.strip().lower() == b"transfer-encoding":
            return body.endswith(b"0\r\n\r\n")
    return False


def blocked_by_waf(case, answer):
    """The WAF's block: its JSON error (a HEAD answer has no body, so
    there its status and content type)."""
    status, _, body, ctype = answer
    if b'"code":"blocked"' in body:
        return True
    head = case["method"] == "HEAD" or (case.get("raw_request_b64") or "").startswith("SEVBRC")
    return head and status >= 400 and ctype.startswith("application/json")


def audit_ids(path):
    """Rule ids by request id, from the audit log."""
    out = collections.defaultdict(set)
    with open(path) as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            for v in entry.get("verdicts", []):
                for rid in v.get("rule_ids", []):
                    if rid.isdigit():
                        out[entry.get("request_id", "")].add(int(rid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--audit", help="per-rule mode: the server's audit log")
    ap.add_argument("--decision", action="store_true")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--floor", type=float, default=0.0, help="exit 1 below this percentage")
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    cases = load(args.cases, args.sample, args.only)
    started = time.monotonic()
    answers = {}
    for c in cases:
        data = raw_bytes(c)
        answers[c["id"]] = None if data is None else send(args.host, args.port, data, args.timeout)
    elapsed = time.monotonic() - started

    failures = collections.defaultdict(list)
    passed = scored = unsent = 0
    if args.decision:
        for c in cases:
            if c["expect"] != "block" or c.get("paranoia_level") != 1 or c.get("proxy_ignored"):
                continue
            scored += 1
            a = answers[c["id"]]
            if a is None:
                unsent += 1
            if a is not None and blocked_by_waf(c, a):
                passed += 1
            else:
                failures[c["rule"]].append(f"{c['id']}({a[0] if a else 'no answer'})")
        what = "attack cases of PL1 rules blocked at PL1"
    else:
        time.sleep(1.0)  # the audit writer is a background thread
        matched = audit_ids(args.audit)
        for c in cases:
            a = answers[c["id"]]
            ids = matched.get(a[1], set()) if a else set()
            exp, noexp = c["expect_ids"], c["no_expect_ids"]
            if not exp and not noexp:
                if c.get("status") is None:
                    continue  # checks log text only
                ok = a is not None and a[0] == c["status"]
            else:
                ok = all(i in ids for i in exp) and not any(i in ids for i in noexp)
            scored += 1
            if a is None:
                unsent += 1
            if ok:
                passed += 1
            else:
                failures[c["rule"]].append(c["id"])
        what = "cases passed per rule (PL4, detection only)"
    pct = 100.0 * passed / max(scored, 1)
    print(f"{what}: {passed}/{scored} ({pct:.1f} %) in {elapsed:.1f} s"
          f" ({len(cases)} cases read, {unsent} not routable or unanswered)")
    for rule in sorted(failures, key=str):
        print(f"  {rule}: {len(failures[rule])} failed ({' '.join(failures[rule])})")
    if pct < args.floor:
        print(f"below the floor of {args.floor} %", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
