"""Drives Wharf's binary transport with the Python client (examples/wharf_binary.py,
the `msgpack` package) over a real Unix socket and TCP. Prints
"N passed, M failed" and exits non-zero when a check fails.

    binary_client.py SOCKET TCP_ADDR HTTP_BASE
"""

import os
import socket
import struct
import sys
import threading
import urllib.request

import msgpack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../examples"))
from wharf_binary import Client, WharfError, header  # noqa: E402

SOCK, TCP, HTTP = sys.argv[1], sys.argv[2], sys.argv[3]
passed, failed = 0, 0


def check(name, fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print(f"ok   {name}")
    except Exception as err:  # a failed check, whatever raised it
        failed += 1
        print(f"FAIL {name}: {type(err).__name__}: {err}")


def expect_error(fn, status, code):
    try:
        fn()
    except WharfError as err:
        assert (err.status, err.code) == (status, code), f"got {err.status} {err.code}: {err.message}"
        return err
    raise AssertionError(f"expected {status} {code}, got an answer")


def echo_round_trip():
    with Client(SOCK) as c:
        a = c.call("echo", b"hello", headers=[("content-type", "text/plain")])
        assert a["status"] == 200 and a["body"] == b"hello", a
        assert header(a, "content-type") == "text/plain", a["headers"]
        assert header(a, "x-request-id"), "every answer carries x-request-id"


def a_pipeline_answers_like_an_agent():
    with Client(SOCK) as c:
        a = c.call("echo-twice", b"twice")
        assert a["status"] == 200 and a["body"] == b"twice", a


def tcp_and_large_bodies():
    body = bytes(range(256)) * 4096  # 1 MiB, every byte value
    with Client(TCP) as c:
        a = c.call("echo", body)
        assert a["body"] == body, len(a["body"])


def pipelined_answers_come_as_they_finish():
    with Client(SOCK) as c:
        slow = c.send("spin", b"x")
        fast = [c.send("echo", f"n{i}") for i in range(20)]
        order = []
        for _ in range(21):
            frame = c.receive()
            order.append(frame["id"])
        assert order[-1] == slow, f"the slow request should answer last: {order}"
        assert sorted(order[:-1]) == fast


def the_slow_request_gets_a_deadline_error():
    with Client(SOCK) as c:
        err = expect_error(lambda: c.call("spin", b"x"), 504, "deadline_exceeded")
        assert err.id is not None


def many_in_flight_all_answered():
    with Client(SOCK) as c:
        ids = [c.send("echo", f"body {i}") for i in range(300)]
        for i, rid in enumerate(ids):
            assert c.answer(rid)["body"] == f"body {i}".encode()


def unknown_agent_and_bad_request_fields():
    with Client(SOCK) as c:
        expect_error(lambda: c.call("nope", b""), 404, "agent_not_found")
        expect_error(lambda: c.call("echo", b"", method="NOT A METHOD"), 400, "bad_frame")
        expect_error(lambda: c.call("echo", b"", headers=[("bad name", "v")]), 400, "bad_frame")
        expect_error(lambda: c.call("echo", b"", path="no-slash"), 400, "bad_frame")
        # The connection still serves after each of them.
        assert c.call("echo", b"still here")["body"] == b"still here"


def malformed_frames_get_error_frames_and_the_connection_lives():
    with Client(SOCK) as c:
        c.send_payload(b"\x93\x01\x02\x03")  # an array, not a map
        frame = c.receive()
        assert frame["id"] is None and frame["error"]["code"] == "bad_frame", frame
        c.send_payload(msgpack.packb({"id": 77, "agent": 5}))
        frame = c.receive()
        assert frame["id"] == 77 and frame["error"]["code"] == "bad_frame", frame
        assert "agent" in frame["error"]["message"]
        c.send_payload(b"\xdf\xff\xff\xff\xff")  # a map claiming 4 billion keys
        assert c.receive()["error"]["code"] == "bad_frame"
        c.send_payload(msgpack.packb({"id": 78, "agent": "echo", "x": [[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}))
        frame = c.receive()
        assert frame["id"] == 78 and "nest" in frame["error"]["message"], frame
        # Unknown keys are ignored.
        a = c.call("echo", b"ok", future_field={"a": [1, 2]})
        assert a["body"] == b"ok"


def oversized_frame_closes_only_that_connection():
    other = Client(SOCK)
    with Client(SOCK) as c:
        c.sock.sendall(struct.pack(">I", 0xFFFFFFF0))  # 4 GiB announced, nothing sent
        frame = c.receive()
        assert frame["error"]["code"] == "frame_too_large", frame
        assert c.receive() is None, "the connection is closed after the reason"
    assert other.call("echo", b"unaffected")["body"] == b"unaffected"
    other.close()


def truncated_frames_and_abrupt_peers_hurt_nobody():
    for _ in range(50):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        payload = msgpack.packb({"id": 1, "agent": "echo", "body": b"x" * 1000})
        s.sendall(struct.pack(">I", len(payload)) + payload[:100])
        s.close()
    with Client(SOCK) as c:
        assert c.call("echo", b"fine")["body"] == b"fine"


def filters_run_for_binary_requests():
    with Client(SOCK) as c:
        a = c.call("echo", b"", method="GET", query="q=1%27%20OR%20%271%27=%271")
        assert a["status"] == 403, a
        assert b"blocked" in a["body"], a["body"]
        a = c.call("echo", b"hi")
        assert header(a, "x-content-type-options") == "nosniff", a["headers"]


def affinity_pins_a_session():
    with Client(SOCK) as c:
        first = c.call("counter", b"", affinity="s-bin")["body"]
        second = c.call("counter", b"", affinity="s-bin")["body"]
        other = c.call("counter", b"", affinity="s-other")["body"]
    assert first == b"s-bin 1" and second == b"s-bin 2", (first, second)
    assert other == b"s-other 1", other


def concurrent_connections():
    errors = []

    def worker(n):
        try:
            with Client(SOCK) as c:
                for i in range(30):
                    body = f"{n}-{i}".encode()
                    assert c.call("echo", body)["body"] == body
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def publishes_reach_a_watcher():
    import json
    watch = urllib.request.urlopen(HTTP + "/topics/binary.%3E", timeout=30)
    assert watch.readline().startswith(b": watching binary.>"), "the watch opened"
    with Client(SOCK) as c:
        a = c.publish("binary.news", b"\xff\x00raw")
        assert a["status"] == 202, a
        assert json.loads(a["body"]) == {"topic": "binary.news", "queued": 1}, a["body"]
        # Bad topics and payloads past `max-payload` get the HTTP API's errors;
        # the connection goes on.
        expect_error(lambda: c.publish("binary.*", b""), 400, "bad_topic")
        expect_error(lambda: c.publish("binary.big", b"x" * (1 << 20 | 1)), 413, "body_too_large")
        expect_error(lambda: c.call("echo", b"", topic="binary.news"), 400, "bad_frame")
        assert c.publish("binary.after", "ok")["status"] == 202
    events = []
    while len(events) < 2:
        line = watch.readline()
        assert line, "the watch stays open"
        if line.startswith(b"data: "):
            events.append(json.loads(line[6:]))
    watch.close()
    assert [{k: v for k, v in e.items() if k != "id"} for e in events] == [
        {"topic": "binary.news", "payload": "/wByYXc=", "encoding": "base64"},
        {"topic": "binary.after", "payload": "ok"},
    ], events


def kept_messages_are_read_back():
    import json
    with Client(SOCK) as c:
        for n in range(3):
            assert c.publish("binary.kept", "k%d" % n)["status"] == 202
        a = c.read("binary.>", order="newest", limit=2, match="^k")
        assert a["status"] == 200, a
        page = json.loads(a["body"])
        assert [m["payload"] for m in page["messages"]] == ["k2", "k1"], page
        # The cursor pages on, over the same frames.
        rest = json.loads(c.read("binary.>", order="newest", before=page["next"], match="^k")["body"])
        assert [m["payload"] for m in rest["messages"]] == ["k0"], rest
        expect_error(lambda: c.read("binary.>", limit=0), 400, "bad_query")
        expect_error(lambda: c.read("nothing.kept"), 404, "not_kept")
        put = {"id": 99001, "topic": "binary.kept", "method": "PUT"}
        c.send_payload(msgpack.packb(put, use_bin_type=True))
        expect_error(lambda: c.answer(99001), 400, "bad_frame")


def metrics_count_the_transport():
    text = urllib.request.urlopen(HTTP + "/metrics").read().decode()
    answers = [l for l in text.splitlines() if l.startswith("wharf_binary_answers_total")]
    assert answers and float(answers[0].split()[-1]) > 300, answers
    faults = [l for l in text.splitlines() if l.startswith("wharf_binary_faults_total")]
    counted = {l.split('"')[1]: float(l.split()[-1]) for l in faults}
    assert counted.get("frame_too_large", 0) >= 1 and counted.get("bad_frame", 0) >= 4, counted
    assert counted.get("truncated_frame", 0) >= 1, counted


for name, fn in list(globals().items()):
    if callable(fn) and fn.__module__ == "__main__" and name not in ("check", "expect_error", "header"):
        if name in ("Client", "WharfError"):
            continue
        check(name, fn)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
